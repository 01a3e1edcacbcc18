// Draws profiled ops as an SVG timeline (profiler::timeline_svg).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tandem/profiler.h"

namespace tandem::profiler {

namespace {

constexpr int kLabelWidth = 190;
constexpr int kRowHeight = 22;
constexpr int kTop = 40;

const char* queue_colour(Queue queue) {
  switch (queue) {
    case Queue::compute:
      return "#4878d0";
    case Queue::copy_h2d:
      return "#6acc64";
    case Queue::copy_d2h:
      return "#ee854a";
    case Queue::copy_d2d:
      return "#956cb4";
    case Queue::comm:
      return "#d65f5f";
  }
  return "#999999";
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A round tick step (1, 2 or 5 times a power of ten) giving about `target` ticks.
double tick_step(double span, int target) {
  const double raw = span / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * magnitude) return m * magnitude;
  }
  return 10 * magnitude;
}

}  // namespace

std::string timeline_svg(const std::vector<OpEvent>& events, int width_px) {
  // Rows: lanes grouped by device, devices and lanes in order of first appearance.
  std::vector<std::pair<std::string, std::string>> rows;  // (device, lane)
  std::map<std::pair<std::string, std::string>, int> row_of;
  std::int64_t first = 0, last = 1;
  if (!events.empty()) {
    first = events.front().start_ns;
    last = events.front().end_ns;
  }
  std::vector<const OpEvent*> sorted;
  for (const OpEvent& e : events) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const OpEvent* a, const OpEvent* b) {
    if (a->device.kind != b->device.kind) return a->device.kind < b->device.kind;
    if (a->device.id != b->device.id) return a->device.id < b->device.id;
    return a->lane < b->lane;
  });
  for (const OpEvent* e : sorted) {
    auto key = std::make_pair(to_string(e->device), e->lane);
    if (row_of.try_emplace(key, static_cast<int>(rows.size())).second) rows.push_back(key);
    first = std::min(first, e->start_ns);
    last = std::max(last, e->end_ns);
  }
  const double span_us = std::max(1e-3, static_cast<double>(last - first) / 1000.0);
  const int plot_width = std::max(200, width_px - kLabelWidth - 20);
  const auto x_of = [&](std::int64_t ns) {
    return kLabelWidth + static_cast<double>(ns - first) / 1000.0 / span_us * plot_width;
  };
  const std::vector<DeviceOverlap> figures = overlap(events);
  const int plot_bottom = kTop + static_cast<int>(rows.size()) * kRowHeight;
  const int height = plot_bottom + 60 + 18 * static_cast<int>(figures.size());

  std::string svg;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">tandem timeline: "
                "%zu ops over %.1f us</text>\n",
                width_px, height, events.size(), span_us);
  svg += buf;
  // Legend.
  int legend_x = width_px - 420;
  for (Queue q : {Queue::compute, Queue::copy_h2d, Queue::copy_d2h, Queue::copy_d2d, Queue::comm}) {
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%d\" y=\"10\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                  "<text x=\"%d\" y=\"19\">%s</text>\n",
                  legend_x, queue_colour(q), legend_x + 14, queue_name(q));
    svg += buf;
    legend_x += 82;
  }
  // Lane rows with alternating background.
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int y = kTop + static_cast<int>(r) * kRowHeight;
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>"
                  "<text x=\"6\" y=\"%d\">%s %s</text>\n",
                  y, width_px, kRowHeight, r % 2 ? "#f4f4f4" : "#ffffff", y + 15,
                  escape(rows[r].first).c_str(), escape(rows[r].second).c_str());
    svg += buf;
  }
  // Ops.
  for (const OpEvent* e : sorted) {
    const int row = row_of.at({to_string(e->device), e->lane});
    const double x0 = x_of(e->start_ns);
    const double w = std::max(0.5, x_of(e->end_ns) - x0);
    const int y = kTop + row * kRowHeight + 3;
    std::snprintf(
        buf, sizeof buf,
        "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" stroke-width=\"0.6\"%s>"
        "<title>%s #%llu: %.2f-%.2f us (%.2f us)%s</title></rect>\n",
        x0, y, w, kRowHeight - 6, queue_colour(e->queue),
        e->failed || e->skipped ? " stroke=\"red\"" : " stroke=\"white\"", escape(e->name).c_str(),
        static_cast<unsigned long long>(e->id), (e->start_ns - first) / 1000.0,
        (e->end_ns - first) / 1000.0, (e->end_ns - e->start_ns) / 1000.0,
        e->skipped ? " skipped" : (e->failed ? " failed" : ""));
    svg += buf;
  }
  // Time axis.
  const double step = tick_step(span_us, 10);
  std::snprintf(buf, sizeof buf,
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", kLabelWidth,
                plot_bottom, kLabelWidth + plot_width, plot_bottom);
  svg += buf;
  for (double t = 0; t <= span_us * 1.0001; t += step) {
    const double x = kLabelWidth + t / span_us * plot_width;
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\"/>"
                  "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g us</text>\n",
                  x, plot_bottom, x, plot_bottom + 5, x, plot_bottom + 18, t);
    svg += buf;
  }
  // Overlap figures.
  int y = plot_bottom + 45;
  for (const DeviceOverlap& o : figures) {
    std::snprintf(buf, sizeof buf,
                  "<text x=\"10\" y=\"%d\">%s: wall %.1f us, compute %.1f us, h2d %.1f us, "
                  "d2h %.1f us, lane busy sum %.1f us, overlap efficiency %.3f</text>\n",
                  y, to_string(o.device).c_str(), o.wall_us, o.compute_us, o.h2d_us, o.d2h_us,
                  o.lane_busy_sum_us, o.overlap_efficiency);
    svg += buf;
    y += 18;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tandem::profiler
