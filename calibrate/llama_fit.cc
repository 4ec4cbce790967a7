#include "calibrate/llama_fit.h"

#include <algorithm>
#include <cmath>

namespace vramsim::calibrate {
namespace {

// Whether `x` has a spread worth a slope: its range over 5% of its mean.
bool spread(const std::vector<double>& x) {
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  double mean = 0;
  for (double v : x) mean += v / static_cast<double>(x.size());
  return *hi - *lo > 0.05 * std::fabs(mean);
}

// y = b0 + b1 x when x has a spread and there are 3 points or more, else y = b0 (the mean,
// its standard error s / sqrt(n)).
LinearFit line_or_mean(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() >= 3 && spread(x)) return least_squares({x}, y);
  return least_squares({}, y);
}

double at(const LinearFit& f, double x) { return f.coef.size() > 1 ? f.coef[0] + f.coef[1] * x : f.coef[0]; }

}  // namespace

LlamaLogFit fit_llama_log(const std::vector<LogRecord>& records) {
  LlamaLogFit out;
  std::vector<double> context, step, tokens, prompt_s, prompt_per_token;
  for (const auto& r : records) {
    if (r.format != "llama.cpp" || r.steps <= 0) continue;
    ++out.requests;
    out.prompt_tokens += static_cast<double>(r.prompt_tokens);
    out.gen_tokens += static_cast<double>(r.gen_tokens);
    context.push_back(static_cast<double>(r.prompt_tokens) + static_cast<double>(r.gen_tokens) / 2.0);
    step.push_back(r.step_s);
    if (r.prompt_tokens > 0 && r.prompt_s > 0) {
      tokens.push_back(static_cast<double>(r.prompt_tokens));
      prompt_s.push_back(r.prompt_s);
      prompt_per_token.push_back(r.prompt_s / static_cast<double>(r.prompt_tokens));
    }
  }
  if (out.requests == 0) return out;
  out.prompt_tokens /= static_cast<double>(out.requests);
  out.gen_tokens /= static_cast<double>(out.requests);
  out.context = out.prompt_tokens + out.gen_tokens / 2.0;
  if (out.requests >= 2) out.decode = line_or_mean(context, step);
  if (out.decode.ok) out.step_s = at(out.decode, out.context);
  if (tokens.size() >= 3 && spread(tokens)) {
    out.prompt = least_squares({tokens}, prompt_s);
  } else if (tokens.size() >= 2) {
    out.prompt = least_squares({}, prompt_per_token);
    out.prompt_per_token = true;
  }
  if (out.prompt.ok) {
    const double seconds = out.prompt_per_token ? out.prompt.coef[0] * out.prompt_tokens : at(out.prompt, out.prompt_tokens);
    if (seconds > 0) out.prompt_tok_s = out.prompt_tokens / seconds;
  }
  return out;
}

}  // namespace vramsim::calibrate
