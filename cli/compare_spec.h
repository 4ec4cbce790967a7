// `vramsim compare`: the options a buyer weighs (cards, with an optional price), the models and
// the workload, as a YAML file (configs/compare/*.yaml) or flags; what each option gave; and the
// answer in words, derived from those results (never typed).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/catalogue.h"
#include "core/config_tree.h"

namespace vramsim::cli {

struct CompareOption {
  std::string name;               // as printed: "2x RTX 3090", "RTX 3090 + RTX 5090" by default (the cards' display names)
  std::vector<std::string> gpus;  // catalogue cards, device 0 first: one, N identical, or a mixed machine
  std::optional<std::string> host;  // the host of a discrete card (else the spec's); none on an Apple part
  // Bought: what the option costs (added, or whole), in the spec's currency. Rented (a cloud
  // instance): its price per hour, power and host included. At most one of the two.
  std::optional<double> price;
  std::optional<double> price_per_hour;
  bool unified = false;  // an Apple part (its own host)
  // The cards as `plan --gpu` takes them ("rtx-3090,rtx-5090") and as the validation tables
  // label them ("2x rtx-3090", "rtx-3090 + rtx-5090": reports::cards_label).
  std::string gpu_flag() const;
  std::string label() const;
  bool identical() const;  // one card, or several of one
};

struct CompareSpec {
  std::string name;
  std::string question;             // the question the comparison answers (printed first), or ""
  std::vector<std::string> models;  // catalogue models, or model files (YAML, GGUF) as written
  std::vector<std::string> model_refs;  // what plan is given for each: the name, or the file's absolute path
  std::vector<CompareOption> options;
  std::optional<std::string> host;  // the default host for discrete cards
  std::string engine = "llama.cpp";
  std::string currency = "USD";
  std::int64_t context = 4096;
  int users = 1;                    // > 1: also the aggregate throughput of that many closed-loop clients
  // What a kWh of electricity costs the owner of a bought option, in `currency` (none: not
  // given); the energy cost per generated token is its J/token at that price.
  std::optional<double> energy_price;
  bool error_bars = true;           // the cards' measured errors were looked up (compare --no-error-bars: not)
};

// Decodes a compare file. Throws config::ConfigError at the key (an unknown card, model or host
// with the nearest names; an Apple part in a list; a discrete card without a host; a rented
// option without its own host; a price <= 0, or both price and price_per_hour).
CompareSpec decode_compare_spec(const config::Node& root, const config::Catalogue& catalogue);

// What the best configuration `plan` found for one option and model gave (no value: none ran).
struct CompareCell {
  bool ran = false;
  std::string why_not;              // when !ran: plan's reason
  std::string flags, engine, quant, placement;
  bool all_on_gpu = false;          // every layer (and expert) on the GPUs
  bool lower_quality = false;       // a format below Q4_K_M that plan stepped down to (its quality rule)
  double decode_tok_s = 0, prefill_tok_s = 0, ttft_s = 0;
  // J per generated token of that run: the machine's where known (GPU boards + host CPU packages,
  // or an Apple part's whole-machine figures), else the GPU boards'; `with_host` says which.
  std::optional<double> j_per_token;
  bool j_with_host = false;
  std::optional<double> users_tok_s;  // aggregate at spec.users clients
  std::int64_t max_context = 0;
  // The median |error| of the public corpus's prediction rows on this option's card(s) (decode,
  // prefill) and their counts; none: no measured row.
  std::optional<double> decode_error, prefill_error;
  std::size_t decode_rows = 0, prefill_rows = 0;
};

// What a million generated tokens cost on an option, in the spec's currency (none: no price to
// go by, or it did not run). Rented: its hourly price over an hour's tokens, at the aggregate of
// spec.users clients when > 1, else at one request's decode. Bought: its electricity alone, the
// machine's J/token at spec.energy_price (the purchase comes on top: break_even_tokens).
struct TokenCost {
  double per_million = 0;
  bool rented = false;
};
std::optional<TokenCost> token_cost(const CompareSpec& spec, const CompareOption& option, const CompareCell& cell);
// How many generated tokens a bought option must make before its price (and its electricity,
// where priced) comes to less than renting at `rented_per_million` a million; none when it never
// does (its own cost per token is not below the rent) or it has no price.
std::optional<double> break_even_tokens(const CompareSpec& spec, const CompareOption& option, const CompareCell& cell,
                                        double rented_per_million);

// cells[model][option], in the spec's order.
using CompareResults = std::vector<std::vector<CompareCell>>;

// The answer in words, one paragraph per model: which option decodes fastest and by how much
// over each other, the throughput at spec.users, decode per unit of price, what does not fit on
// the GPUs, and how far the tool has been off on those cards. Deterministic text.
std::vector<std::string> compare_conclusion(const CompareSpec& spec, const CompareResults& results);

}  // namespace vramsim::cli
