// The fault-injection switch (tandem/detail/fault_injection.h): per kind, the armed rule and
// the counts of events and injected failures.
//
// Each kind's state is a few atomics, so that hooks on many threads (engine workers, sim
// streams, the front end) count and decide without a lock. Arming writes the rules first and
// sets the flag last (release); a hook that sees the flag (relaxed) may see a kind's rule a
// moment late, which is harmless because plans are armed between programs, not during one.
#include "tandem/detail/fault_injection.h"

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "tandem/errors.h"

namespace tandem::detail {

std::atomic<bool> g_faults_armed{false};

namespace {

struct KindState {
  std::atomic<bool> active{false};
  std::atomic<std::uint64_t> nth{0};
  // probability * 2^64, saturated: an event fails when its hash is below it.
  std::atomic<std::uint64_t> threshold{0};
  std::atomic<std::uint64_t> seed{0};
  std::atomic<std::uint64_t> events{0};
  std::atomic<std::uint64_t> injected{0};
  std::atomic<std::uint64_t> last_injected{0};
};

std::array<KindState, testing::kFaultKinds>& states() {
  static std::array<KindState, testing::kFaultKinds> all;
  return all;
}

KindState& state(testing::FaultKind kind) {
  return states()[static_cast<std::size_t>(kind)];
}

// SplitMix64's finaliser: a counter-based hash, so an event's fate depends only on the seed, the
// kind and the event's number, not on which thread got there first.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t threshold_of(double probability) {
  if (!(probability > 0)) return 0;
  if (probability >= 1) return ~std::uint64_t{0};
  return static_cast<std::uint64_t>(std::ldexp(probability, 64));
}

}  // namespace

bool inject_fault(testing::FaultKind kind) noexcept {
  KindState& s = state(kind);
  if (!s.active.load(std::memory_order_relaxed)) return false;
  const std::uint64_t event = s.events.fetch_add(1, std::memory_order_relaxed) + 1;
  const std::uint64_t nth = s.nth.load(std::memory_order_relaxed);
  bool fail = false;
  if (nth > 0) {
    fail = event == nth;
  } else if (const std::uint64_t threshold = s.threshold.load(std::memory_order_relaxed)) {
    const std::uint64_t seed = s.seed.load(std::memory_order_relaxed);
    fail = mix(mix(seed ^ (static_cast<std::uint64_t>(kind) << 56)) ^ event) < threshold;
  }
  if (fail) {
    s.injected.fetch_add(1, std::memory_order_relaxed);
    s.last_injected.store(event, std::memory_order_relaxed);
  }
  return fail;
}

std::string injected_fault_note(testing::FaultKind kind) {
  return std::string(" (injected fault: ") + testing::fault_kind_name(kind) + " #" +
         std::to_string(state(kind).last_injected.load(std::memory_order_relaxed)) + ")";
}

}  // namespace tandem::detail

namespace tandem::testing {

namespace {

constexpr std::array<const char*, kFaultKinds> kKindNames = {
    "host_alloc", "device_alloc", "sim_launch", "sim_kernel", "cuda_call", "file"};

[[noreturn]] void reject_plan(const std::string& text, const std::string& what) {
  std::string kinds;
  for (const char* name : kKindNames) kinds += std::string(kinds.empty() ? "" : ", ") + name;
  throw Error("tandem: fault plan '" + text + "': " + what +
              "; expected rules 'kind:N' (the Nth event fails) or 'kind:p=P[,seed=S]' (each "
              "event fails with probability P in [0, 1]) separated by ';', kinds: " +
              kinds);
}

std::uint64_t parse_unsigned(const std::string& text, std::string_view value, const char* what) {
  const std::string copy(value);
  char* end = nullptr;
  errno = 0;
  const unsigned long long number = std::strtoull(copy.c_str(), &end, 10);
  if (copy.empty() || copy.front() == '-' || errno != 0 || *end != '\0') {
    reject_plan(text, std::string(what) + " '" + copy + "' is not a non-negative integer");
  }
  return number;
}

FaultRule parse_rule(const std::string& text, std::string_view rule) {
  const std::size_t colon = rule.find(':');
  if (colon == std::string_view::npos) {
    reject_plan(text, "rule '" + std::string(rule) + "' has no ':'");
  }
  const std::string_view name = rule.substr(0, colon);
  const std::string_view value = rule.substr(colon + 1);
  FaultRule parsed;
  bool known = false;
  for (int kind = 0; kind < kFaultKinds; ++kind) {
    if (name == kKindNames[static_cast<std::size_t>(kind)]) {
      parsed.kind = static_cast<FaultKind>(kind);
      known = true;
    }
  }
  if (!known) reject_plan(text, "unknown kind '" + std::string(name) + "'");
  if (!value.starts_with("p=")) {
    parsed.nth = parse_unsigned(text, value, "the event number");
    return parsed;
  }
  const std::size_t comma = value.find(',');
  const std::string probability(
      value.substr(2, comma == std::string_view::npos ? std::string_view::npos : comma - 2));
  char* end = nullptr;
  parsed.probability = std::strtod(probability.c_str(), &end);
  if (probability.empty() || *end != '\0' || !(parsed.probability >= 0) || parsed.probability > 1) {
    reject_plan(text, "the probability '" + probability + "' is not a number in [0, 1]");
  }
  if (comma != std::string_view::npos) {
    const std::string_view seed = value.substr(comma + 1);
    if (!seed.starts_with("seed=")) {
      reject_plan(text, "'" + std::string(seed) + "' should be seed=S");
    }
    parsed.seed = parse_unsigned(text, seed.substr(5), "the seed");
  }
  return parsed;
}

}  // namespace

const char* fault_kind_name(FaultKind kind) noexcept {
  return kKindNames[static_cast<std::size_t>(kind)];
}

FaultPlan parse_fault_plan(const std::string& text) {
  FaultPlan plan;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t semicolon = rest.find(';');
    const std::string_view rule = rest.substr(0, semicolon);
    if (!rule.empty()) plan.push_back(parse_rule(text, rule));
    if (semicolon == std::string_view::npos) break;
    rest.remove_prefix(semicolon + 1);
  }
  return plan;
}

void arm_faults(const FaultPlan& plan) {
  for (const FaultRule& rule : plan) {
    if (!(rule.probability >= 0) || rule.probability > 1) {
      throw Error("tandem: arm_faults: the probability " + std::to_string(rule.probability) +
                  " of kind " + fault_kind_name(rule.kind) + " is not in [0, 1]");
    }
  }
  disarm_faults();
  for (detail::KindState& s : detail::states()) {
    s.events.store(0, std::memory_order_relaxed);
    s.injected.store(0, std::memory_order_relaxed);
    s.last_injected.store(0, std::memory_order_relaxed);
  }
  for (const FaultRule& rule : plan) {
    detail::KindState& s = detail::state(rule.kind);
    s.nth.store(rule.nth, std::memory_order_relaxed);
    s.threshold.store(detail::threshold_of(rule.probability), std::memory_order_relaxed);
    s.seed.store(rule.seed, std::memory_order_relaxed);
    s.active.store(true, std::memory_order_relaxed);
  }
  detail::g_faults_armed.store(!plan.empty(), std::memory_order_release);
}

void disarm_faults() noexcept {
  detail::g_faults_armed.store(false, std::memory_order_release);
  for (detail::KindState& s : detail::states()) s.active.store(false, std::memory_order_relaxed);
}

std::uint64_t fault_events(FaultKind kind) noexcept {
  return detail::state(kind).events.load(std::memory_order_relaxed);
}

std::uint64_t faults_injected(FaultKind kind) noexcept {
  return detail::state(kind).injected.load(std::memory_order_relaxed);
}

}  // namespace tandem::testing
