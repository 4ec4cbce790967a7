// `vramsim calibrate --from-log FILE`: reads an engine's telemetry (the case study's strata
// lines, llama.cpp server timings), pairs each request's lines, writes per-request records and
// fits the engine-level parameters by least squares (calibrate/log_fit.h, docs/calibration.md).
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <fmt/format.h>

#include "calibrate/log_fit.h"
#include "calibrate/report.h"
#include "cli/args.h"
#include "cli/calibrate_engine.h"
#include "cli/commands.h"
#include "cli/write_error.h"
#include "core/config_reader.h"
#include "core/json.h"
#include "core/units.h"

namespace vramsim::cli {
namespace {

const char* kHelp = R"(usage: vramsim calibrate --from-log FILE [options]

Reads an inference engine's log: the case study's engine lines (`strata serve: prompt ...`
followed on the next line by `strata serve: decode expert cache hit rate: ...`; `vramsim run
--log-format strata` writes them) and llama.cpp server timings (`prompt eval time = ...`
followed by `eval time = ...`). Only strictly adjacent pairs make a request; other lines with
a request figure are counted as unpaired. Fits, by least squares over the requests,
  t_step = t_fast + c_miss x (cache misses per decode step)
  t_step = t_fast + c_pcie x (experts read over PCIe per decode step)
and prints the parameters with standard errors and residuals (docs/calibration.md).

  --json                 print one JSON object (docs/json-schema.md)
  --records-out FILE     write the per-request records: CSV when FILE ends in .csv, else JSON lines
  --draft-tokens N       drafts proposed per step (MTP): steps = drafted / N, exact for an
                         engine whose every step drafts N; without it
                         steps = (generated - 1) - accepted when the log gives drafts (exact
                         for one that drafts no more than the tokens left, as vramsim's logs),
                         else (generated - 1) / --tokens-per-step (the first token is the
                         prefill's; llama_print_timings' "N runs" are N steps)
  --tokens-per-step X    tokens per decode step for lines without draft figures, 1 to 64
                         (default 1)
  --max-misses-per-step X  fit only the requests with at most X misses per step (the
                         low-miss regime, where each miss is a layer's only one)

With --scenario S.yaml (the machine the llama.cpp log was measured on: its card, model and
weights' format), fits the log's decode step against context and its prompt rate, and solves
the llama.cpp engine's layer_launch and gpu_compute_efficiency so that the scenario, simulated
at the log's mean request, gives the same figures (docs/calibration.md):
  --scenario S.yaml      the scenario (engine of the llama.cpp family)
  --set key=value        an override of the scenario, as in `vramsim run`
  --write-engine FILE    write an engine file with the solved keys (engine: FILE in a scenario)
  --configs DIR          catalogue directory
)";

struct Dist {
  double p50 = 0, mean = 0, min = 0, max = 0;
};

Dist dist(const std::vector<double>& v) {
  const calibrate::Stats s = calibrate::summarize(v);
  return {s.median, s.mean, s.min, s.max};
}

std::string number_text(double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

using units::fixed;

// Residual of one record under a step fit, when the record took part in it.
std::optional<double> residual(const calibrate::StepFit& f, const calibrate::LogRecord& r, std::optional<double> max_x) {
  if (!f.fit.ok || !calibrate::in_step_fit(r, max_x)) return std::nullopt;
  const double x = f.regressor == "misses" ? r.misses_per_step : r.pcie_reads_per_step;
  return r.step_s - (f.fit.coef[0] + f.fit.coef[1] * x);
}

void write_records(const std::string& path, const std::vector<calibrate::LogRecord>& records,
                   const calibrate::StepFit& miss_fit, std::optional<double> max_x) {
  auto file = io::AtomicFile::open(path);
  if (!file) throw UsageError(file.error().message);
  std::ostream& out = (*file)->stream();
  const bool csv = path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
  if (csv)
    out << "line,format,prompt_tokens,prompt_s,gen_tokens,decode_s,decode_tok_s,accepted,drafted,steps,step_s,hits,"
           "lookups,hit_rate,pcie_reads,routed,pcie_overflow,misses_per_step,pcie_reads_per_step,residual_s\n";
  for (const auto& r : records) {
    const auto res = residual(miss_fit, r, max_x);
    if (csv) {
      auto opt = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string(); };
      auto cache = [&](double v) { return r.has_cache ? number_text(v) : std::string(); };
      auto count = [&](std::int64_t v) { return r.has_cache ? std::to_string(v) : std::string(); };
      out << r.line << ',' << r.format << ',' << r.prompt_tokens << ',' << number_text(r.prompt_s) << ','
          << r.gen_tokens << ',' << number_text(r.decode_s) << ',' << number_text(r.decode_tok_s) << ','
          << opt(r.accepted) << ',' << opt(r.drafted) << ',' << number_text(r.steps) << ',' << number_text(r.step_s)
          << ',' << count(r.hits) << ',' << count(r.lookups) << ',' << cache(r.hit_rate) << ','
          << count(r.pcie_reads) << ',' << count(r.routed) << ',' << cache(r.pcie_overflow) << ','
          << cache(r.misses_per_step) << ',' << cache(r.pcie_reads_per_step) << ','
          << (res ? number_text(*res) : std::string()) << '\n';
      continue;
    }
    json::Writer j(false);
    j.begin_object().field("line", static_cast<std::int64_t>(r.line)).field("format", r.format)
        .field("prompt_tokens", r.prompt_tokens).field("prompt_s", r.prompt_s).field("gen_tokens", r.gen_tokens)
        .field("decode_s", r.decode_s).field("decode_tok_s", r.decode_tok_s).field("accepted", r.accepted)
        .field("drafted", r.drafted).field("steps", r.steps).field("step_s", r.step_s);
    if (r.has_cache) {
      j.field("hits", r.hits).field("lookups", r.lookups).field("hit_rate", r.hit_rate).field("pcie_reads", r.pcie_reads)
          .field("routed", r.routed).field("pcie_overflow", r.pcie_overflow).field("misses_per_step", r.misses_per_step)
          .field("pcie_reads_per_step", r.pcie_reads_per_step);
    }
    j.field("residual_s", res).end_object();
    out << j.str() << "\n";
  }
  commit_or_throw(**file);
}

// `slope` names the per-unit cost ("c_miss"); its JSON key carries the unit ("c_miss_s").
void write_fit_json(json::Writer& j, const char* key, const calibrate::StepFit& f, const std::string& slope) {
  j.key(key);
  if (!f.fit.ok) {
    j.null();
    return;
  }
  const std::string x = f.regressor == "misses" ? "misses_per_step" : "pcie_reads_per_step";
  j.begin_object()
      .field("model", "t_step = t_fast + " + slope + " * " + x)
      .field("regressor", x)
      .field("n", static_cast<std::int64_t>(f.fit.n))
      .field("dof", static_cast<std::int64_t>(f.fit.dof))
      .field("x_min", f.x_min)
      .field("x_max", f.x_max);
  j.key("t_fast_s").begin_object().field("value", f.fit.coef[0]).field("stderr", f.fit.stderr_[0]).end_object();
  j.key(slope + "_s").begin_object().field("value", f.fit.coef[1]).field("stderr", f.fit.stderr_[1]).end_object();
  j.field("residual_rms_s", f.fit.residual_rms).field("r2", f.fit.r2).end_object();
}

// A fitted time and its standard error in the value's unit, to the error's first significant
// digit ("12.611ms +- 0.008ms"): the value can be used in the recipes' subtractions as printed.
std::string with_error(double seconds, double stderr_s) {
  const double a = std::fabs(seconds);
  const auto [scale, unit] = a < 1e-6 ? std::pair{1e9, "ns"} : a < 1e-3 ? std::pair{1e6, "us"} : a < 1.0 ? std::pair{1e3, "ms"}
                                                                                                       : std::pair{1.0, "s"};
  const double se = stderr_s * scale;
  const int decimals = se > 0 && std::isfinite(se) ? std::clamp(static_cast<int>(-std::floor(std::log10(se))), 0, 6) : 3;
  return fmt::format("{:.{}f}{} +- {:.{}f}{}", seconds * scale, decimals, unit, se, decimals, unit);
}

void print_fit(std::ostream& o, const calibrate::StepFit& f, const char* name, const char* per) {
  const auto& s = f.fit;
  o << "  fit: t_step = t_fast + " << name << " x " << per << " per step  (" << s.n << " requests, " << s.dof
    << " degrees of freedom)\n";
  if (!s.ok) {
    // Say which: too few requests, or one value of the regressor for all of them.
    if (s.n < 3)
      o << "    not fitted: " << s.n << " request" << (s.n == 1 ? "" : "s") << " with cache figures in the fit (3 needed)\n";
    else
      o << "    not fitted: every request in the fit has " << fixed(f.x_min, 2) << " " << per
        << " per step, so the line has no slope to fit\n";
    return;
  }
  // A negative intercept is no step time: the line, extrapolated, says only that the data do not reach it.
  o << "    t_fast       " << with_error(s.coef[0], s.stderr_[0])
    << (s.coef[0] < 0 ? "  (negative: no step time; the data are too far from 0 " + std::string(per) + " to give one)"
                      : "  (the step time with no " + std::string(per) + ")")
    << "\n"
    << "    " << name << "       " << with_error(s.coef[1], s.stderr_[1])
    << "  per " << (f.regressor == "misses" ? "miss" : "read") << "\n"
    << "    residual RMS " << calibrate::format_time(s.residual_rms) << ", R^2 " << fixed(s.r2, 3) << "; " << per
    << " per step in the fit " << fixed(f.x_min, 2) << " to " << fixed(f.x_max, 2)
    << (f.x_min > 0.25 * f.x_max ? " (t_fast is extrapolated far below the data)" : "") << "\n";
}

double positive_number(const Args& args, const char* name) {
  const std::string t = *args.get(name);
  double v = 0;
  const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (res.ec != std::errc() || res.ptr != t.data() + t.size() || !(v > 0) || !std::isfinite(v))
    throw UsageError(std::string(name) + ": expected a positive number, got \"" + t + "\"");
  return v;
}

}  // namespace

int calibrate_command(const std::vector<std::string>& argv) {
  OptionSpec spec;
  spec.with_value = {"--from-log", "--records-out", "--draft-tokens", "--tokens-per-step", "--max-misses-per-step", "--scenario",
                     "--write-engine", "--configs"};
  spec.repeated = {"--set"};
  spec.flags = {"--json", "--help"};
  Args args(argv, spec);
  if (args.answered_help(kHelp)) return 0;
  if (!args.positional().empty()) throw UsageError("unexpected argument \"" + args.positional()[0] + "\" (see --help)");
  const std::string file = args.require("--from-log");
  calibrate::LogOptions options;
  if (args.get("--draft-tokens")) options.draft_tokens = static_cast<int>(args.integer("--draft-tokens", 0, 1, 64));
  if (args.get("--tokens-per-step")) {
    // As --draft-tokens: a step makes at least its one token and at most 64 (a draft's length).
    options.tokens_per_step = positive_number(args, "--tokens-per-step");
    if (options.tokens_per_step < 1 || options.tokens_per_step > 64)
      throw UsageError("--tokens-per-step: expected a number from 1 to 64 (tokens one decode step makes), got \"" +
                       *args.get("--tokens-per-step") + "\"");
  }
  std::optional<double> max_x;
  if (args.get("--max-misses-per-step")) max_x = positive_number(args, "--max-misses-per-step");

  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw UsageError("--from-log " + file + " is a directory; give the log file");
  if (auto checked = config::check_input_file(file); !checked) {
    std::string why = checked.error().message;  // "FILE: error: ..."
    if (const auto at = why.find(": error: "); at != std::string::npos) why.replace(at, 9, ": ");
    throw UsageError("--from-log " + why);
  }
  std::ifstream in(file);
  if (!in) throw UsageError("cannot read " + file);
  calibrate::ParsedLog log;
  try {
    log = calibrate::parse_log(in, file, options);
  } catch (const calibrate::InputError& e) {
    throw config::ConfigError(Error{e.what()});
  }
  if (log.records.empty() && !log.skipped.empty()) {
    // The paired requests have no decode step: nothing to fit. Unpaired lines are named too,
    // since pairing them may be what the log needs.
    std::string why = file + ":" + std::to_string(log.skipped.front().line) + ":1: error: no request to fit: the " +
                      std::to_string(log.skipped.size()) + " paired requests generated one token or none, so none has a decode step";
    if (!log.unpaired.empty())
      why += "; " + std::to_string(log.unpaired.size()) + " lines are unpaired (first: " + log.unpaired.front().kind +
             " at line " + std::to_string(log.unpaired.front().line) + ")";
    throw config::ConfigError(Error{why});
  }
  if (log.records.empty()) {
    const std::size_t at = log.unpaired.empty() ? 1 : log.unpaired.front().line;
    throw config::ConfigError(Error{
        file + ":" + std::to_string(at) + ":1: error: no request found: no generation line is followed by its cache line " +
        "(strata) or prompt eval line by its eval line (llama.cpp) in " + std::to_string(log.lines) + " lines; " +
        std::to_string(log.unpaired.size()) + " unpaired" +
        (log.unpaired.empty() ? std::string() : " (first: " + log.unpaired.front().kind + ")")});
  }

  if (!log.unread.empty())
    std::cerr << "vramsim calibrate: warning: " << file << ":" << log.unread.front().line << ": " << config::printable(log.unread.front().kind)
              << (log.unread.size() > 1 ? " (and " + std::to_string(log.unread.size() - 1) + " more lines like it)" : std::string())
              << "\n";
  if (args.get("--scenario")) {
    if (auto path = args.get("--records-out")) write_records(*path, log.records, calibrate::fit_step_time(log.records, "misses", max_x), max_x);
    return calibrate_engine(args, log, file);
  }
  if (!args.all("--set").empty()) throw UsageError("--set needs --scenario S.yaml (the machine the log was measured on)");
  if (args.get("--write-engine")) throw UsageError("--write-engine needs --scenario S.yaml (the machine the log was measured on)");
  const calibrate::StepFit miss_fit = calibrate::fit_step_time(log.records, "misses", max_x);
  const calibrate::StepFit pcie_fit = calibrate::fit_step_time(log.records, "pcie_reads", max_x);
  if (auto path = args.get("--records-out")) write_records(*path, log.records, miss_fit, max_x);

  std::vector<double> hit, overflow, decode, step;
  std::int64_t with_cache = 0, llama = 0;
  for (const auto& r : log.records) {
    decode.push_back(r.decode_tok_s);
    if (r.steps > 0) step.push_back(r.step_s);
    if (r.format == "llama.cpp") ++llama;
    if (!r.has_cache) continue;
    ++with_cache;
    hit.push_back(r.hit_rate);
    overflow.push_back(r.pcie_overflow);
  }
  const char* steps_from = options.draft_tokens ? "drafted / draft_tokens (where the log gives drafts)"
                                                : "(generated - 1) - accepted (where the log gives drafts), else (generated - 1) / "
                                                  "tokens_per_step (llama_print_timings' \"N runs\": N / tokens_per_step)";

  if (args.flag("--json")) {
    json::Writer j;
    j.begin_object().field("log", file).field("lines", static_cast<std::int64_t>(log.lines))
        .field("requests", static_cast<std::int64_t>(log.records.size())).field("requests_with_cache", with_cache)
        .field("llama_cpp_requests", llama).field("unpaired", static_cast<std::int64_t>(log.unpaired.size()));
    j.key("unpaired_lines").begin_array();
    for (const auto& u : log.unpaired)
      j.begin_object().field("line", static_cast<std::int64_t>(u.line)).field("kind", u.kind).end_object();
    j.end_array();
    j.key("skipped_lines").begin_array();
    for (const auto& u : log.skipped)
      j.begin_object().field("line", static_cast<std::int64_t>(u.line)).field("kind", u.kind).end_object();
    j.end_array();
    auto write_dist = [&](const char* name, const std::vector<double>& v) {
      j.key(name);
      if (v.empty()) {
        j.null();
        return;
      }
      const Dist d = dist(v);
      j.begin_object().field("p50", d.p50).field("mean", d.mean).field("min", d.min).field("max", d.max).end_object();
    };
    write_dist("hit_rate", hit);
    write_dist("pcie_overflow", overflow);
    write_dist("decode_tok_s", decode);
    write_dist("step_s", step);
    j.field("steps_from", steps_from).field("max_misses_per_step", max_x);
    write_fit_json(j, "fit", miss_fit, "c_miss");
    write_fit_json(j, "fit_pcie", pcie_fit, "c_pcie");
    j.end_object();
    std::cout << j.str() << "\n";
    return 0;
  }

  std::ostringstream o;
  o << "vramsim calibrate: " << file << "\n"
    << "  " << log.lines << " lines, " << log.records.size() << " requests (" << with_cache << " with cache figures, "
    << llama << " llama.cpp), " << log.unpaired.size() << " unpaired lines\n";
  for (std::size_t i = 0; i < log.unpaired.size() && i < 5; ++i)
    o << "    line " << log.unpaired[i].line << ": " << log.unpaired[i].kind << "\n";
  if (log.unpaired.size() > 5) o << "    ... (" << log.unpaired.size() - 5 << " more; --json lists them all)\n";
  if (!log.skipped.empty())
    o << "  skipped " << log.skipped.size() << " request(s) with no decode step (first: line " << log.skipped.front().line << ")\n";
  if (!hit.empty()) {
    const Dist h = dist(hit), p = dist(overflow);
    o << "  hit rate        p50 " << fixed(100 * h.p50, 1) << "%  (" << fixed(100 * h.min, 1) << "-" << fixed(100 * h.max, 1)
      << "%)\n"
      << "  PCIe overflow   p50 " << fixed(100 * p.p50, 2) << "%  (" << fixed(100 * p.min, 2) << "-" << fixed(100 * p.max, 2)
      << "%)\n";
  }
  const Dist d = dist(decode);
  o << "  decode tok/s    p50 " << fixed(d.p50, 1) << "  mean " << fixed(d.mean, 1) << "  (range " << fixed(d.min, 0) << "-"
    << fixed(d.max, 0) << ")\n";
  if (!step.empty()) o << "  step time       p50 " << calibrate::format_time(dist(step).p50) << "  (steps: " << steps_from << ")\n";
  o << "\n";
  if (max_x) o << "  fits over the requests with at most " << fixed(*max_x, 2) << " misses per step\n";
  print_fit(o, miss_fit, "c_miss", "cache misses");
  print_fit(o, pcie_fit, "c_pcie", "PCIe reads");
  o << "\n  How these map onto configs/engines/*.yaml (step_overhead, miss_sync): docs/calibration.md\n";
  std::cout << o.str();
  return 0;
}

}  // namespace vramsim::cli
