#include "cli/calibrate_engine.h"

#include <fmt/printf.h>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "calibrate/llama_fit.h"
#include "calibrate/report.h"
#include "cli/catalogue_access.h"
#include "cli/commands.h"
#include "core/catalogue.h"
#include "core/config_reader.h"
#include "core/json.h"
#include "core/json_value.h"
#include "core/output_file.h"
#include "core/subprocess.h"
#include "workloads/formats.h"
#include "workloads/params_text.h"

namespace vramsim::cli {
namespace {
namespace fs = std::filesystem;

std::string text(const char* printf_format, double v) { return fmt::sprintf(printf_format, v); }

// A scalar as YAML: plain when it reads back as the same text, else double-quoted.
std::string yaml_scalar(const config::Node& n) {
  const std::string& t = n.text();
  bool plain = !t.empty() && !n.quoted();
  for (char c : t)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '+' || c == '/')) plain = false;
  return plain ? t : workloads::yaml_quoted(t);
}

// A config tree as flow YAML ({a: b, c: [d, e]}).
std::string flow_yaml(const config::Node& n) {
  if (n.is_map()) {
    std::string s = "{";
    for (std::size_t i = 0; i < n.entries().size(); ++i)
      s += (i ? ", " : "") + n.entries()[i].first + ": " + flow_yaml(n.entries()[i].second);
    return s + "}";
  }
  if (n.is_sequence()) {
    std::string s = "[";
    for (std::size_t i = 0; i < n.items().size(); ++i) s += (i ? ", " : "") + flow_yaml(n.items()[i]);
    return s + "]";
  }
  return n.is_null() ? "null" : yaml_scalar(n);
}

// The scenario's figures for the log's reference request, from one `vramsim run` child.
struct Simulated {
  double step_s = 0;        // 1 / decode tok/s (one token a step)
  double prompt_tok_s = 0;  // prefill rate
};

class Simulator {
 public:
  Simulator(std::vector<std::string> base) : base_(std::move(base)) {}
  Simulated operator()(const std::vector<std::string>& sets) const {
    std::vector<std::string> argv = base_;
    for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
    const proc::ProcessResult r = proc::run(argv);
    if (r.exit_code != 0) throw UsageError("--scenario: the scenario does not run at the log's request: " + r.err);
    auto doc = json::parse(r.out);
    if (!doc) throw std::runtime_error("vramsim run gave no JSON: " + doc.error().message);
    auto figure = [&](const char* metric) {
      const json::Value* m = doc->find(metric);
      const json::Value* p50 = m ? m->find("p50") : nullptr;
      return p50 && p50->is_number() ? p50->number() : 0.0;
    };
    const double decode = figure("decode_tok_s");
    return {decode > 0 ? 1.0 / decode : 0.0, figure("prefill_tok_s")};
  }

 private:
  std::vector<std::string> base_;
};

// A solved key: its value, or why there is none; the scenario's figure with the preset's value
// and with the solved one.
struct Solved {
  std::optional<double> value;
  std::string why_not;
  double before = 0, after = 0;
};

std::string us(double seconds) { return text("%.1fus", seconds * 1e6); }

}  // namespace

int calibrate_engine(const Args& args, const calibrate::ParsedLog& log, const std::string& log_file) {
  const calibrate::LlamaLogFit fit = calibrate::fit_llama_log(log.records);
  if (!fit.decode.ok)
    throw UsageError("--scenario: " + log_file + " has " + std::to_string(fit.requests) +
                     " llama.cpp request(s) with a decode step; the engine fit needs 2 or more (llama-server's "
                     "`prompt eval time` / `eval time` lines)");
  config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  const std::string scenario_arg = args.require("--scenario");
  const fs::path scenario_file = fs::absolute(scenario_arg);
  auto tree = config::load_yaml_file(scenario_file.string());
  if (!tree) throw config::ConfigError(tree.error());
  const std::vector<std::string> sets = args.all("--set");
  apply_overrides(*tree, sets);
  const auto formats = workloads::FormatTables::load(catalogue);
  const sim::Scenario scenario = sim::decode_scenario(*tree, catalogue, formats);
  if (scenario.engine.family != sim::EngineFamilyId::LlamaCpp)
    throw UsageError("--scenario: its engine is " + scenario.engine.preset +
                     "; a llama.cpp log calibrates an engine of the llama.cpp family (engine: { preset: llama.cpp })");

  // The reference request: the log's mean prompt and generated tokens.
  const auto prompt = static_cast<std::int64_t>(std::llround(std::max(1.0, fit.prompt_tokens)));
  const auto gen = static_cast<std::int64_t>(std::llround(std::max(2.0, fit.gen_tokens)));
  std::vector<std::string> base = {proc::self_executable(), "run", scenario_file.string(), "--json", "--configs",
                                   catalogue.root().string()};
  for (const auto& s : sets) base.insert(base.end(), {"--set", s});
  for (const std::string& s : std::vector<std::string>{"workload.clients=1", "workload.requests=1", "workload.prompt_tokens=" + std::to_string(prompt),
                              "workload.gen_tokens=" + std::to_string(gen)})
    base.insert(base.end(), {"--set", s});
  const Simulator simulate(base);

  // layer_launch: the step is linear in it.
  Solved launch;
  const double preset_launch = scenario.engine.physics.layer_launch;
  const Simulated with_preset = simulate({});
  launch.before = with_preset.step_s;
  const Simulated at0 = simulate({"engine.layer_launch=0us"}), at100 = simulate({"engine.layer_launch=100us"});
  const double per_us = (at100.step_s - at0.step_s) / 100e-6;
  if (!(per_us > 0)) {
    launch.why_not = "the scenario's decode step does not depend on it (no layer on a GPU)";
  } else {
    const double value = (fit.step_s - at0.step_s) / per_us;
    if (value < 0)
      launch.why_not = "the log's step, " + calibrate::format_time(fit.step_s) + ", is shorter than the scenario's bytes alone (" +
                       calibrate::format_time(at0.step_s) + " with no per-layer cost): the card, the weights' format or the "
                       "bandwidth share differ from the machine's";
    else if (value >= 0.01)
      launch.why_not = "it would be " + us(value) + " a layer, more than the 10 ms a per-layer cost may be: the scenario is "
                       "not the machine of the log";
    else
      launch.value = value;
  }
  const std::string launch_set = "engine.layer_launch=" + us(launch.value.value_or(preset_launch));
  launch.after = simulate({launch_set}).step_s;

  // gpu_compute_efficiency: the prompt rate rises with it, where the prompt is compute-bound.
  Solved compute;
  const double preset_eff = scenario.engine.physics.gpu_compute_efficiency;
  compute.before = with_preset.prompt_tok_s;
  auto rate = [&](double eff) { return simulate({launch_set, "engine.gpu_compute_efficiency=" + text("%.4f", eff)}).prompt_tok_s; };
  if (!fit.prompt.ok || fit.prompt_tok_s <= 0) {
    compute.why_not = "the log has fewer than 2 requests with a prompt";
  } else {
    const double low = 0.02, high = 1.0;
    const double r_low = rate(low), r_high = rate(high);
    if (r_high < fit.prompt_tok_s)
      compute.why_not = "the log's prompt rate, " + text("%.1f", fit.prompt_tok_s) + " tok/s, is above the scenario's at the card's full rate (" +
                        text("%.1f", r_high) + " tok/s)";
    else if (r_high < 1.02 * r_low)
      compute.why_not = "the scenario's prompt of " + std::to_string(prompt) + " tokens is not compute-bound (its rate hardly moves with the key)";
    else if (r_low > fit.prompt_tok_s)
      compute.why_not = "the log's prompt rate, " + text("%.1f", fit.prompt_tok_s) + " tok/s, is below the scenario's at 2% of the card's rate";
    else {
      double lo = low, hi = high;
      for (int i = 0; i < 20 && hi - lo > 1e-4; ++i) {
        const double mid = 0.5 * (lo + hi);
        (rate(mid) < fit.prompt_tok_s ? lo : hi) = mid;
      }
      compute.value = std::round(0.5 * (lo + hi) * 1e4) / 1e4;
    }
  }
  compute.after = rate(compute.value.value_or(preset_eff));

  // The engine file.
  std::optional<std::string> written;
  if (auto out = args.get("--write-engine")) {
    const config::Node* engine = tree->find("engine");
    std::string preset = "expert-cache";
    config::Node overrides = config::Node::map({});
    if (engine && engine->is_scalar()) preset = engine->text();
    if (engine && engine->is_map()) {
      for (const auto& [key, value] : engine->entries()) {
        if (key == "preset") preset = value.text();
        else if (key != "layer_launch" && key != "gpu_compute_efficiency") overrides.set(key, value);
      }
      if (!engine->find("preset")) preset.clear();  // an inline engine: its keys are all there
    }
    // A file (not a catalogue name): named by its absolute path, OUT may be anywhere.
    if (engine && config::looks_like_path(preset)) {
      const config::Node& at = engine->is_map() && engine->find("preset") ? *engine->find("preset") : *engine;
      preset = fs::absolute(config::resolve_path(at.origin(), preset)).lexically_normal().string();
    }
    std::ostringstream f;
    f << "# The engine as measured on this machine: vramsim calibrate --from-log " << log_file << " --scenario " << scenario_arg;
    for (const auto& s : sets) f << " --set " << s;
    f << "\n# (" << fit.requests << " llama.cpp requests). Name this file as the scenario's engine (engine: FILE).\n";
    if (!preset.empty()) f << "preset: " << preset << "\n";
    for (const auto& [key, value] : overrides.entries()) f << key << ": " << flow_yaml(value) << "\n";
    if (launch.value)
      f << "# FITTED: the log's decode step, " << calibrate::format_time(fit.step_s) << " at " << text("%.0f", fit.context)
        << " tokens of context (" << prompt << " + " << gen << " / 2), by t_step = a + b x context\n"
        << "layer_launch: " << us(*launch.value) << "\n";
    if (compute.value)
      f << "# FITTED: the log's prompt rate, " << text("%.1f", fit.prompt_tok_s) << " tok/s at " << prompt
        << " tokens, by t_prompt = p0 + p1 x tokens\n"
        << "gpu_compute_efficiency: " << text("%.4f", *compute.value) << "\n";
    if (auto ok = io::write_file(*out, f.str()); !ok) throw std::runtime_error(ok.error().message);
    written = *out;
  }

  auto fit_json = [](json::Writer& j, const char* name, const calibrate::LinearFit& f, const char* a, const char* b) {
    j.key(name).begin_object().field("ok", f.ok).field("requests", static_cast<std::int64_t>(f.n));
    if (f.ok) {
      j.field(a, f.coef[0]).field(std::string(a) + "_stderr", f.stderr_[0]);
      if (f.coef.size() > 1) j.field(b, f.coef[1]).field(std::string(b) + "_stderr", f.stderr_[1]);
      j.field("residual_rms", f.residual_rms);
    }
    j.end_object();
  };
  auto solved_json = [](json::Writer& j, const char* name, const Solved& s, double preset) {
    j.key(name).begin_object().key("value").value(s.value).field("preset", preset).field("simulated_before", s.before)
        .field("simulated_after", s.after);
    if (!s.value) j.field("not_fitted", s.why_not);
    j.end_object();
  };
  if (args.flag("--json")) {
    json::Writer j;
    j.begin_object().field("log", log_file).field("scenario", scenario_arg).field("requests", static_cast<std::int64_t>(fit.requests))
        .field("prompt_tokens", fit.prompt_tokens).field("gen_tokens", fit.gen_tokens).field("context", fit.context)
        .field("step_s", fit.step_s).field("prompt_tok_s", fit.prompt_tok_s);
    fit_json(j, "decode", fit.decode, fit.decode.coef.size() > 1 ? "a_s" : "step_s", "b_s_per_token");
    fit_json(j, "prompt", fit.prompt, fit.prompt_per_token ? "s_per_token" : "p0_s", "p1_s_per_token");
    solved_json(j, "layer_launch", launch, preset_launch);
    solved_json(j, "gpu_compute_efficiency", compute, preset_eff);
    j.key("written").value(written);
    j.end_object();
    std::cout << j.str() << "\n";
    return 0;
  }
  std::ostringstream o;
  o << "vramsim calibrate: " << log_file << " on " << scenario_arg << "\n  " << fit.requests << " llama.cpp requests; the mean one: "
    << prompt << " prompt + " << gen << " generated tokens\n";
  const auto& d = fit.decode;
  if (d.coef.size() > 1)
    o << "  decode: t_step = " << text("%.4g", d.coef[0] * 1e3) << " ms (+- " << text("%.2g", d.stderr_[0] * 1e3) << ") + "
      << text("%.4g", d.coef[1] * 1e6) << " us (+- " << text("%.2g", d.stderr_[1] * 1e6) << ") x context; "
      << calibrate::format_time(fit.step_s) << " at " << text("%.0f", fit.context) << " tokens\n";
  else
    o << "  decode: t_step = " << text("%.4g", d.coef[0] * 1e3) << " ms (+- " << text("%.2g", d.stderr_[0] * 1e3)
      << "), one context (no spread to fit a slope)\n";
  if (fit.prompt.ok) o << "  prompt: " << text("%.1f", fit.prompt_tok_s) << " tok/s at " << prompt << " tokens\n";
  auto solved = [&](const char* key, const Solved& s, const std::string& value, const std::string& preset, const std::string& before,
                    const std::string& after) {
    if (s.value)
      o << "  " << key << ": " << value << " (preset " << preset << "): simulated " << before << " -> " << after << "\n";
    else
      o << "  " << key << ": not fitted: " << s.why_not << "\n";
  };
  solved("layer_launch", launch, launch.value ? us(*launch.value) : "", us(preset_launch), calibrate::format_time(launch.before),
         calibrate::format_time(launch.after) + " a step (the log: " + calibrate::format_time(fit.step_s) + ")");
  solved("gpu_compute_efficiency", compute, compute.value ? text("%.4f", *compute.value) : "", text("%.4f", preset_eff),
         text("%.1f", compute.before), text("%.1f", compute.after) + " prompt tok/s (the log: " + text("%.1f", fit.prompt_tok_s) + ")");
  if (written) o << "  wrote " << *written << " (engine: " << *written << " in the scenario uses it)\n";
  std::cout << o.str();
  return 0;
}

}  // namespace vramsim::cli
