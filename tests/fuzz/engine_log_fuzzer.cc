// Fuzz target for the engine-log reader (calibrate/log_fit.h: the strata and llama.cpp lines)
// and what `vramsim calibrate --from-log` does with what it reads: any bytes must end in
// records or an InputError naming the file (FILE:LINE:COL: error: ...), never a crash, a hang,
// a leak or undefined behaviour; every record it returns holds finite, non-negative figures
// (no NaN or infinity reaches a fit, a CSV or a JSON record); the step fits are finite or
// refused. Any other outcome aborts, so that libFuzzer keeps the input.
//
// Each input is read under the extremes of the LogOptions the command can set (tokens per
// step, draft tokens), then given whole to the command itself, text or --json, with records written as
// JSON lines or CSV (to /dev/null through a link named *.csv, so nothing is synced to disk).
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "calibrate/log_fit.h"
#include "cli/commands.h"
#include "core/config_reader.h"

namespace {

namespace fs = std::filesystem;
using vramsim::calibrate::LogOptions;
using vramsim::calibrate::LogRecord;

// An outcome the reader promises never to produce: report it and abort.
void expect(bool holds, const char* what, const std::string& detail = "") {
  if (holds) return;
  std::fprintf(stderr, "engine_log_fuzzer: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

bool figure(double v) { return std::isfinite(v) && v >= 0; }
bool share(double v) { return v >= 0 && v <= 1; }

void expect_sound(const LogRecord& r, std::size_t lines) {
  const std::string at = "line " + std::to_string(r.line);
  expect(r.line >= 1 && r.line <= lines, "a record outside the log", at);
  expect(r.prompt_tokens >= 0 && r.gen_tokens >= 0, "a negative token count", at);
  expect(figure(r.prompt_s) && figure(r.decode_s) && figure(r.decode_tok_s), "a time or rate that is not a finite figure", at);
  expect(figure(r.steps) && r.steps > 0 && figure(r.step_s), "a record without a finite decode step", at);
  if (r.accepted && r.drafted) expect(*r.accepted >= 0 && *r.accepted <= *r.drafted, "more drafts accepted than drafted", at);
  if (!r.has_cache) return;
  expect(r.hits >= 0 && r.hits <= r.lookups && r.pcie_reads >= 0 && r.pcie_reads <= r.routed, "inconsistent cache counts", at);
  expect(share(r.hit_rate) && share(r.pcie_overflow), "a hit rate or PCIe share outside [0, 1]", at);
  expect(figure(r.misses_per_step) && figure(r.pcie_reads_per_step), "a per-step cache figure that is not finite", at);
}

void expect_fit(const vramsim::calibrate::StepFit& f) {
  if (!f.fit.ok) return;
  expect(f.fit.coef.size() == 2 && f.fit.stderr_.size() == 2, "a fit without its two coefficients");
  expect(std::isfinite(f.x_min) && std::isfinite(f.x_max) && f.x_min <= f.x_max, "a fit over a non-finite range");
  expect(std::isfinite(f.fit.residual_rms) && std::isfinite(f.fit.r2), "a fit with non-finite residuals");
}

// The reader alone, under `options`, and the fits on what it read.
void read_and_fit(const std::string& text, const LogOptions& options) {
  using namespace vramsim::calibrate;
  std::istringstream in(text);
  ParsedLog log;
  try {
    log = parse_log(in, "fuzz.log", options);
  } catch (const InputError& e) {
    expect(std::string_view(e.what()).rfind("fuzz.log:", 0) == 0, "an error that does not name the file", e.what());
    return;
  }
  for (const auto& r : log.records) expect_sound(r, log.lines);
  for (const auto& u : log.unpaired) expect(u.line >= 1 && u.line <= log.lines, "an unpaired line outside the log");
  for (const auto& u : log.skipped) expect(u.line >= 1 && u.line <= log.lines, "a skipped line outside the log");
  for (const char* regressor : {"misses", "pcie_reads"})
    for (std::optional<double> max_x : {std::optional<double>(), std::optional<double>(0.5), std::optional<double>(1e300)})
      expect_fit(fit_step_time(log.records, regressor, max_x));
}

// A folder of this process's own: the log the command reads, and records.csv -> /dev/null.
class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "vramsim-engine-log-fuzz-XXXXXX").string();
    expect(::mkdtemp(pattern.data()) != nullptr, "cannot create a scratch folder");
    dir_ = pattern;
    fs::create_symlink("/dev/null", dir_ / "records.csv");
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  std::string log() const { return (dir_ / "fuzz.log").string(); }
  std::string csv() const { return (dir_ / "records.csv").string(); }

 private:
  fs::path dir_;
};

// Discards what is printed on std::cout while it lives.
class Silenced : public std::streambuf {
 public:
  Silenced() : saved_(std::cout.rdbuf(this)) {}
  ~Silenced() override { std::cout.rdbuf(saved_); }
  Silenced(const Silenced&) = delete;
  Silenced& operator=(const Silenced&) = delete;

 protected:
  int_type overflow(int_type c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }

 private:
  std::streambuf* saved_;
};

// `vramsim calibrate --from-log` on the whole input; the options vary with the input's size.
void run_command(const std::string& text) {
  static const Scratch scratch;
  {
    std::ofstream out(scratch.log(), std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    expect(out.flush().good(), "cannot write the scratch log");
  }
  std::vector<std::string> args = {"--from-log", scratch.log()};
  switch (text.size() % 4) {
    case 0: break;
    case 1: args.insert(args.end(), {"--json", "--records-out", "/dev/null"}); break;
    case 2: args.insert(args.end(), {"--json", "--draft-tokens", "3", "--max-misses-per-step", "0.5"}); break;
    case 3: args.insert(args.end(), {"--tokens-per-step", "2", "--records-out", scratch.csv()}); break;
  }
  try {
    const Silenced quiet;
    (void)vramsim::cli::calibrate_command(args);
  } catch (const vramsim::config::ConfigError& e) {  // a malformed line, or nothing to fit
    expect(std::string_view(e.what()).rfind(scratch.log() + ":", 0) == 0, "an error that does not name the log", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The options' extremes here (the command adds 2 tokens per step and 3 draft tokens).
  read_and_fit(text, LogOptions{1.0, std::nullopt});
  read_and_fit(text, LogOptions{64.0, std::nullopt});
  read_and_fit(text, LogOptions{1.0, 64});
  run_command(text);
  return 0;
}
