// The split-size sweep as an SVG line chart: seconds per step against the micro-batch size
// (logarithmic axis), with the one-device and model-parallel times as dashed lines, the seed's
// picture of the U-shaped curve. Plain SVG text, no library.
//
//   std::string svg = sweep_svg({{1, 2.9}, {12, 0.6}, {120, 1.1}}, 1.0, 1.05, "sim(0) + sim(1)");
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tandem::examples {

struct SweepPoint {
  std::int64_t split_size = 0;
  double seconds = 0;  // per step
};

namespace detail {

inline std::string svg_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

inline std::string svg_seconds(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g s", value);
  return text;
}

// Appends every piece to `out` (strings are built by appending, never by adding literals).
template <class... Pieces>
void append(std::string& out, const Pieces&... pieces) {
  (out.append(pieces), ...);
}

}  // namespace detail

inline std::string sweep_svg(const std::vector<SweepPoint>& points, double one_device_seconds,
                             double model_parallel_seconds, const std::string& subtitle) {
  using detail::append;
  using detail::svg_number;
  constexpr double kWidth = 720, kHeight = 420;
  constexpr double kLeft = 70, kRight = 190, kTop = 50, kBottom = 60;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  if (points.empty()) return {};
  double most = std::max(one_device_seconds, model_parallel_seconds);
  for (const SweepPoint& p : points) most = std::max(most, p.seconds);
  const double y_max = most * 1.1;
  const double log_min = std::log(static_cast<double>(points.front().split_size));
  const double log_max = std::log(static_cast<double>(points.back().split_size));
  const double log_span = log_max > log_min ? log_max - log_min : 1.0;
  const auto x_of = [&](std::int64_t split) {
    return kLeft + (std::log(static_cast<double>(split)) - log_min) / log_span * plot_w;
  };
  const auto y_of = [&](double seconds) { return kTop + plot_h - seconds / y_max * plot_h; };

  std::string svg;
  append(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", svg_number(kWidth),
         "\" height=\"", svg_number(kHeight), "\" font-family=\"sans-serif\" font-size=\"12\">\n");
  append(svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  append(svg, "<text x=\"", svg_number(kLeft), "\" y=\"22\" font-size=\"15\">",
         "Pipeline parallel: seconds per training step by split size</text>\n");
  append(svg, "<text x=\"", svg_number(kLeft), "\" y=\"40\" fill=\"#555\">", subtitle, "</text>\n");
  // The y grid and ticks, then the axes over them.
  for (int i = 0; i <= 5; ++i) {
    const double seconds = y_max * i / 5.0;
    const double y = y_of(seconds);
    append(svg, "<line x1=\"", svg_number(kLeft), "\" y1=\"", svg_number(y), "\" x2=\"",
           svg_number(kLeft + plot_w), "\" y2=\"", svg_number(y), "\" stroke=\"#eee\"/>\n");
    append(svg, "<text x=\"", svg_number(kLeft - 6), "\" y=\"", svg_number(y + 4),
           "\" text-anchor=\"end\">", detail::svg_seconds(seconds), "</text>\n");
  }
  append(svg, "<line x1=\"", svg_number(kLeft), "\" y1=\"", svg_number(kTop + plot_h), "\" x2=\"",
         svg_number(kLeft + plot_w), "\" y2=\"", svg_number(kTop + plot_h),
         "\" stroke=\"black\"/>\n");
  append(svg, "<line x1=\"", svg_number(kLeft), "\" y1=\"", svg_number(kTop), "\" x2=\"",
         svg_number(kLeft), "\" y2=\"", svg_number(kTop + plot_h), "\" stroke=\"black\"/>\n");
  for (const SweepPoint& p : points) {
    append(svg, "<text x=\"", svg_number(x_of(p.split_size)), "\" y=\"",
           svg_number(kTop + plot_h + 18), "\" text-anchor=\"middle\">",
           std::to_string(p.split_size), "</text>\n");
  }
  append(svg, "<text x=\"", svg_number(kLeft + plot_w / 2), "\" y=\"", svg_number(kHeight - 16),
         "\" text-anchor=\"middle\">split size (rows per micro-batch, log scale)</text>\n");
  // The two references, dashed, labelled at the right.
  const auto reference = [&](double seconds, const char* colour, const std::string& label) {
    const double y = y_of(seconds);
    append(svg, "<line x1=\"", svg_number(kLeft), "\" y1=\"", svg_number(y), "\" x2=\"",
           svg_number(kLeft + plot_w), "\" y2=\"", svg_number(y), "\" stroke=\"", colour,
           "\" stroke-dasharray=\"6,4\"/>\n");
    append(svg, "<text x=\"", svg_number(kLeft + plot_w + 8), "\" y=\"", svg_number(y + 4),
           "\" fill=\"", colour, "\">", label, "</text>\n");
  };
  reference(one_device_seconds, "#c0392b",
            std::string("one device ") + detail::svg_seconds(one_device_seconds));
  reference(model_parallel_seconds, "#7f8c8d",
            std::string("model parallel ") + detail::svg_seconds(model_parallel_seconds));
  // The sweep.
  std::string line;
  for (const SweepPoint& p : points) {
    line += svg_number(x_of(p.split_size)) + "," + svg_number(y_of(p.seconds)) + " ";
  }
  append(svg, "<polyline points=\"", line,
         "\" fill=\"none\" stroke=\"#2471a3\" stroke-width=\"2\"/>\n");
  const auto best = std::min_element(
      points.begin(), points.end(),
      [](const SweepPoint& a, const SweepPoint& b) { return a.seconds < b.seconds; });
  for (const SweepPoint& p : points) {
    const bool is_best = &p == &*best;
    append(svg, "<circle cx=\"", svg_number(x_of(p.split_size)), "\" cy=\"",
           svg_number(y_of(p.seconds)), "\" r=\"", (is_best ? "5" : "3.5"), "\" fill=\"",
           (is_best ? "#27ae60" : "#2471a3"), "\"><title>split ", std::to_string(p.split_size),
           ": ", detail::svg_seconds(p.seconds), "</title></circle>\n");
  }
  append(svg, "<text x=\"", svg_number(x_of(best->split_size)), "\" y=\"",
         svg_number(y_of(best->seconds) + 20),
         "\" text-anchor=\"middle\" fill=\"#27ae60\">best: ", std::to_string(best->split_size),
         " (", detail::svg_seconds(best->seconds), ")</text>\n");
  append(svg, "</svg>\n");
  return svg;
}

}  // namespace tandem::examples
