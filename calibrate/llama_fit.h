// What a llama.cpp server log tells about the engine on its own machine, fitted by least
// squares over its requests (calibrate/log_fit.h reads them), for `vramsim calibrate
// --from-log LOG --scenario S.yaml`:
//   decode:  t_step = a + b x context      (context: the positions in the KV cache over the
//            request's decode steps, on average its prompt + generated / 2; seconds)
//   prompt:  t_prompt = p0 + p1 x tokens   (the prompt's processed tokens; seconds)
// With no spread in context (or in prompt length) the fit is the mean alone: one coefficient,
// b (p1) unknown. Each coefficient with its standard error. Plain C++, tested without a GPU.
#pragma once

#include <vector>

#include "calibrate/log_fit.h"

namespace vramsim::calibrate {

struct LlamaLogFit {
  std::size_t requests = 0;       // llama.cpp requests with a decode step
  LinearFit decode;               // coef {a, b} or {mean step}; decode.ok false: too few requests
  LinearFit prompt;               // coef {p0, p1} or {mean seconds per token}; prompt.ok false: none
  bool prompt_per_token = false;  // prompt.coef[0] is seconds per token (no spread in length)
  // The reference request: the requests' mean prompt and generated tokens, and the fits at it.
  double prompt_tokens = 0, gen_tokens = 0, context = 0;
  double step_s = 0;              // the decode fit at `context`
  double prompt_tok_s = 0;        // prompt_tokens / the prompt fit at prompt_tokens
};

// Over the llama.cpp records with a decode step (others are left out). Needs 2 requests for a
// mean and 3 for a line.
LlamaLogFit fit_llama_log(const std::vector<LogRecord>& records);

}  // namespace vramsim::calibrate
