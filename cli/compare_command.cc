// `vramsim compare FILE | --model M --option CARDS[=PRICE] ...`: the options a buyer weighs, each
// run with the flags `plan` finds best for it (one `vramsim plan` process per option and model,
// in parallel), one table per model, the answer in words generated from the results, and the
// tool's measured error on those cards (the public corpus's prediction rows, `vramsim validate
// public-corpus`). --report DIR writes the same as compare.md and a self-contained compare.html.
#include <tbb/task_arena.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/args.h"
#include "cli/catalogue_access.h"
#include "cli/commands.h"
#include "cli/compare_spec.h"
#include "cli/write_error.h"
#include "core/config_reader.h"
#include "core/json.h"
#include "core/output_file.h"
#include "core/subprocess.h"
#include "reports/page.h"
#include "workloads/gguf_model.h"
#include "reports/parallel_children.h"
#include "core/units.h"

namespace vramsim::cli {
namespace {
namespace fs = std::filesystem;
using config::Node;

const char* kHelp = R"(usage: vramsim compare FILE [options]
       vramsim compare --model M [--model M2 ...] --option CARDS[=PRICE[/h]][@HOST] --option ... --host H [options]

Compares hardware options for the models a buyer cares about: each option (one card, N identical
cards, a mixed machine, an Apple part, a rented cloud card) runs each model with the flags `vramsim plan` finds best for it, and the
answer comes first, in words derived from the results, with the tool's measured error on those
cards (the public corpus's prediction rows). FILE: a compare file (configs/compare/NAME.yaml, or
a path; docs/compare.md) with name, question, models, host, engine, context, users, currency and
energy_price and options [{gpus, name, price | price_per_hour, host}].

  --model M          a catalogue model (repeatable)
  --option CARDS     a card or a comma list of cards, device 0 first (rtx-3090,rtx-3090 or a
                     mixed rtx-3090,rtx-5090), optionally =PRICE (bought: rtx-5090=1999) or
                     =PRICE/h (rented: h100-sxm=2.49/h) and @HOST, the option's own host (a
                     rented card needs one: h100-sxm=2.49/h@epyc-9554-ddr5); repeatable, at
                     least two
  --host H           the host of the discrete cards (an Apple part is its own host)
  --engine E         llama.cpp (default) | vllm
  --users N          also the aggregate throughput of N closed-loop clients (default 1: none)
  --context N        context window in tokens (default 4096)
  --currency C       the prices' unit (default USD)
  --energy-price P   what a kWh costs the owner (in the currency): each bought option's
                     electricity per million tokens, and a rented option's break-even
  --report DIR       also write DIR/compare.md and DIR/compare.html
  --no-error-bars    skip the validation run that gives each card's measured error (~10 s)
  --json             print one JSON object (docs/json-schema.md)
  -j N, --jobs N     parallel plan processes (default: the cores)
  --configs DIR      catalogue directory
)";

// A YAML double-quoted scalar (JSON's quoting is YAML's).
std::string quoted(const std::string& s) { return "\"" + json::escape(s) + "\""; }

// The spec from the flags, through the same decoder as a file (one set of checks and messages).
CompareSpec spec_from_flags(const Args& args, const config::Catalogue& catalogue) {
  std::ostringstream y;
  y << "name: command line\nmodels: [";
  const auto models = args.all("--model");
  if (models.empty()) throw UsageError("give a compare FILE, or --model and --option (see --help)");
  // A model file on the command line is relative to the working directory: made absolute here,
  // since the spec is read as a YAML text of its own.
  auto model_text = [](const std::string& m) {
    std::error_code ec;
    return workloads::is_model_file(m) && std::filesystem::exists(m, ec) ? std::filesystem::absolute(m).lexically_normal().string() : m;
  };
  for (std::size_t i = 0; i < models.size(); ++i) y << (i ? ", " : "") << quoted(model_text(models[i]));
  y << "]\noptions:\n";
  for (const auto& whole : args.all("--option")) {
    const auto at_host = whole.find('@');
    const std::string o = whole.substr(0, at_host);
    const auto eq = o.find('=');
    const std::string cards = o.substr(0, eq);
    y << "  - gpus: [";
    std::size_t at = 0;
    for (bool first = true; at <= cards.size(); first = false) {
      const auto comma = cards.find(',', at);
      y << (first ? "" : ", ") << quoted(cards.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    y << "]\n";
    if (eq != std::string::npos) {
      const std::string price = o.substr(eq + 1);
      if (price.ends_with("/h"))
        y << "    price_per_hour: " << quoted(price.substr(0, price.size() - 2)) << "\n";
      else
        y << "    price: " << quoted(price) << "\n";
    }
    if (at_host != std::string::npos) y << "    host: " << quoted(whole.substr(at_host + 1)) << "\n";
  }
  if (args.all("--option").empty()) y << "  []\n";
  if (auto h = args.get("--host")) y << "host: " << quoted(*h) << "\n";
  if (auto e = args.get("--engine")) y << "engine: " << quoted(*e) << "\n";
  if (auto c = args.get("--currency")) y << "currency: " << quoted(*c) << "\n";
  if (auto c = args.get("--context")) y << "context: " << quoted(*c) << "\n";
  if (auto u = args.get("--users")) y << "users: " << quoted(*u) << "\n";
  if (auto e = args.get("--energy-price")) y << "energy_price: " << quoted(*e) << "\n";
  auto tree = config::parse_yaml(y.str(), "the command line");
  if (!tree) throw config::ConfigError(tree.error());
  return decode_compare_spec(*tree, catalogue);
}

const Node* member(const Node& n, const char* key) { return n.is_map() ? n.find(key) : nullptr; }
double number(const Node& n, const char* key) {
  const Node* v = member(n, key);
  const auto x = v && v->is_scalar() ? config::parse_number(v->text()) : std::nullopt;
  return x.value_or(0.0);
}
std::string text(const Node& n, const char* key) {
  const Node* v = member(n, key);
  return v && v->is_scalar() ? v->text() : std::string();
}

// plan's reason on stderr: its error line (warnings may come first), without the "... error: " prefix.
std::string reason(const std::string& err) {
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);)
    if (const auto at = line.find("error: "); at != std::string::npos) {
      std::string why = line.substr(at + 7);
      // "nothing fits" is followed by each format's reason: the first says what is short.
      if (std::string next; why == "nothing fits" && std::getline(lines, next))
        why += ": " + next.substr(next.find_first_not_of(' '));
      return why;
    }
  return err.empty() ? "plan failed" : err.substr(0, err.find('\n'));
}

// One `vramsim plan` of an option and a model: its best configuration.
CompareCell plan_cell(const CompareSpec& spec, const CompareOption& o, const std::string& model, const std::string& configs) {
  auto argv = [&](bool users) {
    std::vector<std::string> a = {proc::self_executable(), "plan", "--model", model, "--gpu", o.gpu_flag(), "--engine", spec.engine,
                                  "--context", std::to_string(spec.context), "--top", "1", "-j", "1", "--json", "--configs", configs};
    if (o.host) a.insert(a.end(), {"--host", *o.host});
    if (users) a.insert(a.end(), {"--clients", std::to_string(spec.users), "--goal", "throughput"});
    return a;
  };
  CompareCell c;
  std::vector<std::string> lower;  // the formats below Q4_K_M plan stepped down to
  auto best_of = [&](const proc::ProcessResult& r) -> std::optional<Node> {
    if (r.exit_code != 0) {
      c.why_not = reason(r.err);
      return std::nullopt;
    }
    auto tree = config::parse_yaml(r.out, "plan's output");
    const Node* best = tree ? member(*tree, "best") : nullptr;
    if (!best || !best->is_sequence() || best->items().empty()) {
      c.why_not = "no configuration of it fits";
      return std::nullopt;
    }
    if (const Node* l = member(*tree, "lower_quants_tried"); l && l->is_sequence())
      for (const Node& q : l->items())
        if (q.is_scalar()) lower.push_back(q.text());
    return best->items().front();
  };
  const auto one = best_of(proc::run(argv(false)));
  if (!one) return c;
  c.ran = true;
  c.flags = text(*one, "flags");
  c.engine = text(*one, "engine");
  c.quant = text(*one, "quant");
  c.placement = text(*one, "placement");
  c.lower_quality = std::find(lower.begin(), lower.end(), c.quant) != lower.end();
  c.all_on_gpu = c.placement.rfind("every layer on the GPU", 0) == 0 && c.placement.find("on the CPU") == std::string::npos;
  c.decode_tok_s = number(*one, "decode_tok_s");
  c.prefill_tok_s = number(*one, "prefill_tok_s");
  c.ttft_s = number(*one, "ttft_s");
  c.max_context = static_cast<std::int64_t>(number(*one, "max_context"));
  // The machine's energy where the host's CPU is counted (or an Apple part, whole already).
  const bool unified = o.unified;
  if (const Node* h = member(*one, "j_per_token_with_host"); h && h->is_scalar() && config::parse_number(h->text())) {
    c.j_per_token = number(*one, "j_per_token_with_host");
    c.j_with_host = true;
  } else if (const Node* b = member(*one, "j_per_token"); b && b->is_scalar() && config::parse_number(b->text())) {
    c.j_per_token = number(*one, "j_per_token");
    c.j_with_host = unified;
  }
  if (spec.users > 1)
    if (const auto many = best_of(proc::run(argv(true)))) c.users_tok_s = number(*many, "throughput_tok_s");
  return c;
}

// The public corpus's per-card medians: label -> kind -> (median, rows).
using CardErrors = std::map<std::string, std::map<std::string, std::pair<double, std::size_t>>>;
CardErrors card_errors(const std::string& configs) {
  const auto r = proc::run({proc::self_executable(), "validate", "public-corpus", "--json", "--configs", configs});
  auto tree = config::parse_yaml(r.out, "validate's output");
  CardErrors out;
  const Node* p = tree ? member(*tree, "predictions") : nullptr;
  const Node* cards = p ? member(*p, "by_card") : nullptr;
  if (!cards || !cards->is_sequence()) return out;
  for (const Node& c : cards->items())
    if (const Node* kinds = member(c, "by_kind"); kinds && kinds->is_sequence())
      for (const Node& k : kinds->items())
        out[text(c, "card")][text(k, "group")] = {number(k, "median_abs_error"), static_cast<std::size_t>(number(k, "rows"))};
  return out;
}

void attach_errors(CompareCell& c, const CompareOption& o, const CardErrors& errors) {
  const auto it = errors.find(o.label());
  if (it == errors.end()) return;
  auto take = [&](const char* kind, std::optional<double>& e, std::size_t& n) {
    if (auto k = it->second.find(kind); k != it->second.end()) {
      e = k->second.first;
      n = k->second.second;
    }
  };
  const bool several = o.gpus.size() > 1;
  take(several ? "multi-card" : "decode", c.decode_error, c.decode_rows);  // several cards: their rows, every kind
  if (!several) take("prefill", c.prefill_error, c.prefill_rows);
}

using units::fixed;

// Whether any option has a cost per token to go by (token_cost): a rent or the owner's kWh price.
bool priced_tokens(const CompareSpec& spec) {
  return spec.energy_price || std::any_of(spec.options.begin(), spec.options.end(),
                                          [](const CompareOption& o) { return o.price_per_hour.has_value(); });
}

// What the cost column means, when the table has one (table()).
std::string cost_note(const CompareSpec& spec) {
  if (!priced_tokens(spec)) return "";
  return " The cost of a million tokens is, rented (rent), the hourly price over an hour's tokens" +
         std::string(spec.users > 1 ? " at the aggregate of the users" : "") +
         "; bought (power), the electricity alone" +
         (spec.energy_price ? " at " + fixed(*spec.energy_price, 2) + " " + spec.currency + " a kWh" : std::string()) +
         ", the purchase on top.";
}

// The table of one model: a header and rows of cells (text), shared by the terminal, Markdown and HTML.
std::vector<std::vector<std::string>> table(const CompareSpec& spec, const std::vector<CompareCell>& cells) {
  std::vector<std::vector<std::string>> t;
  std::vector<std::string> head = {"option", "price", "decode tok/s", "prefill tok/s", "TTFT s"};
  if (spec.users > 1) head.push_back(std::to_string(spec.users) + " users tok/s");
  head.insert(head.end(), {"J/token", "decode per 1k " + spec.currency});
  const bool costs = priced_tokens(spec);  // a cost column
  if (costs) head.push_back(spec.currency + " per 1M tokens");
  head.insert(head.end(), {"max context", "decode error (rows)", "placement", "flags"});
  t.push_back(head);
  for (std::size_t o = 0; o < cells.size(); ++o) {
    const auto& c = cells[o];
    const auto& op = spec.options[o];
    std::vector<std::string> row = {op.name, op.price ? fixed(*op.price, 0) : op.price_per_hour ? fixed(*op.price_per_hour, 2) + "/h" : "-"};
    if (!c.ran) {
      row.insert(row.end(), {"-", "-", "-"});
      if (spec.users > 1) row.push_back("-");
      if (costs) row.push_back("-");
      row.insert(row.end(), {"-", "-", "-", "-", "does not run: " + c.why_not, "-"});
    } else {
      row.insert(row.end(), {fixed(c.decode_tok_s, 1), fixed(c.prefill_tok_s, 0), fixed(c.ttft_s, 3)});
      if (spec.users > 1) row.push_back(c.users_tok_s ? fixed(*c.users_tok_s, 0) : "-");
      row.push_back(c.j_per_token ? fixed(*c.j_per_token, 2) + (c.j_with_host ? "" : " (GPU)") : "-");
      row.push_back(op.price ? fixed(c.decode_tok_s / *op.price * 1000, 1) : "-");
      if (costs) {
        const auto cost = token_cost(spec, op, c);
        row.push_back(!cost ? "-" : fixed(cost->per_million, cost->per_million >= 10 ? 1 : 3) + (cost->rented ? " (rent)" : " (power)"));
      }
      row.push_back(std::to_string(c.max_context));
      row.push_back(!spec.error_bars ? "-" : c.decode_error ? fixed(100 * *c.decode_error, 0) + "% (" + std::to_string(c.decode_rows) + ")" : "no rows");
      row.push_back(c.quant + ", " + c.placement);
      row.push_back(c.flags);
    }
    t.push_back(row);
  }
  return t;
}

std::string markdown(const CompareSpec& spec, const CompareResults& results, const std::vector<std::string>& answer) {
  std::ostringstream m;
  m << "# " << spec.name << "\n\n";
  if (!spec.question.empty()) m << "*" << spec.question << "*\n\n";
  m << "## The answer\n\n";
  for (std::size_t i = 0; i < answer.size(); ++i) m << "> " << answer[i] << "\n" << (i + 1 < answer.size() ? ">\n" : "\n");
  for (std::size_t i = 0; i < spec.models.size(); ++i) {
    m << "## " << spec.models[i] << "\n\n";
    const auto t = table(spec, results[i]);
    for (std::size_t r = 0; r < t.size(); ++r) {
      m << "|";
      for (const auto& cell : t[r]) {  // a '|' in a cell would end it
        std::string text;
        for (char c : cell) c == '|' ? text += "\\|" : text += c;
        m << " " << text << " |";
      }
      m << "\n";
      if (r == 0) {
        m << "|";
        for (std::size_t k = 0; k < t[r].size(); ++k) m << (k == 0 ? "---|" : "---:|");
        m << "\n";
      }
    }
    m << "\n";
  }
  m << "Each option runs " << spec.engine << " with the flags `vramsim plan` found best for it (context " << spec.context
    << "). The error column is the median |predicted / measured - 1| of the public corpus's prediction rows on that card "
       "(docs/validation.md). J/token is the machine's (the GPU boards and the host's CPU packages; an Apple part's "
       "whole-machine figures), or the GPU boards' alone where marked (GPU)."
    << cost_note(spec) << "\n";
  return m.str();
}

// compare.html: the Markdown rendered (reports/page.h), the answer set off as a quote.
std::string html(const CompareSpec& spec, const std::string& markdown) {
  return reports::page::html_page(spec.name, markdown, nullptr,
                                  "blockquote{background:#f3f7ff;margin:1em 0;padding:.1em 1em;border-left:4px solid #3366cc}\n"
                                  "td:nth-last-child(-n+2),th:nth-last-child(-n+2){text-align:left}\n");
}

void write_json(const CompareSpec& spec, const CompareResults& results, const std::vector<std::string>& answer) {
  json::Writer j;
  j.begin_object().field("name", spec.name).field("question", spec.question).field("engine", spec.engine)
      .field("context", spec.context).field("users", spec.users).field("currency", spec.currency);
  j.key("energy_price").value(spec.energy_price);
  j.key("answer").begin_array();
  for (const auto& p : answer) j.value(p);
  j.end_array();
  j.key("models").begin_array();
  for (std::size_t i = 0; i < spec.models.size(); ++i) {
    j.begin_object().field("model", spec.models[i]);
    j.key("options").begin_array();
    for (std::size_t o = 0; o < spec.options.size(); ++o) {
      const auto& op = spec.options[o];
      const auto& c = results[i][o];
      j.begin_object().field("name", op.name).field("gpu", op.label()).field("count", static_cast<std::int64_t>(op.gpus.size()));
      j.key("gpus").begin_array();
      for (const auto& g : op.gpus) j.value(g);
      j.end_array();
      j.key("host").value(op.host);
      j.key("price").value(op.price);
      j.key("price_per_hour").value(op.price_per_hour);
      j.field("ran", c.ran);
      if (!c.ran) {
        j.field("why_not", c.why_not).end_object();
        continue;
      }
      j.field("flags", c.flags).field("engine", c.engine).field("quant", c.quant).field("placement", c.placement)
          .field("all_on_gpu", c.all_on_gpu).field("decode_tok_s", c.decode_tok_s).field("prefill_tok_s", c.prefill_tok_s)
          .field("ttft_s", c.ttft_s);
      j.key("j_per_token").value(c.j_per_token);
      j.field("j_per_token_machine", c.j_with_host);
      j.key("users_tok_s").value(c.users_tok_s);
      const auto cost = token_cost(spec, op, c);
      j.key("cost_per_million_tokens").value(cost ? std::optional<double>(cost->per_million) : std::nullopt);
      j.key("cost_basis").value(cost ? std::optional<std::string>(cost->rented ? "rent" : "electricity") : std::nullopt);
      j.field("max_context", c.max_context);
      j.key("decode_error").value(c.decode_error);
      j.field("decode_error_rows", static_cast<std::int64_t>(c.decode_rows));
      j.key("prefill_error").value(c.prefill_error);
      j.field("prefill_error_rows", static_cast<std::int64_t>(c.prefill_rows)).end_object();
    }
    j.end_array().end_object();
  }
  j.end_array().end_object();
  std::cout << j.str() << "\n";
}

}  // namespace

int compare_command(const std::vector<std::string>& argv) {
  proc::forward_termination_signals();
  OptionSpec opts;
  opts.with_value = {"--host", "--engine", "--users", "--context", "--currency", "--energy-price", "--report", "-j", "--jobs", "--configs"};
  opts.repeated = {"--model", "--option"};
  opts.flags = {"--json", "--help", "--no-error-bars"};
  Args args(argv, opts);
  if (args.flag("--help")) {
    std::cout << kHelp;
    return 0;
  }
  config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  CompareSpec spec;
  if (!args.positional().empty()) {
    if (args.positional().size() > 1) throw UsageError("expected one compare FILE (see --help)");
    if (!args.all("--model").empty() || !args.all("--option").empty())
      throw UsageError("give a compare FILE or --model and --option, not both");
    const std::string name = args.positional()[0];
    const fs::path file = name.ends_with(".yaml") ? fs::path(name) : catalogue.root() / "compare" / (name + ".yaml");
    if (!fs::exists(file)) {
      std::string known;
      for (const auto& n : catalogue.names("compare")) known += (known.empty() ? "" : ", ") + n;
      throw UsageError("no compare file \"" + name + "\" (bundled: " + known + "; or a .yaml file)");
    }
    auto tree = config::load_yaml_file(file.string());
    if (!tree) throw config::ConfigError(tree.error());
    spec = decode_compare_spec(*tree, catalogue);
  } else {
    spec = spec_from_flags(args, catalogue);
  }
  spec.error_bars = !args.flag("--no-error-bars");
  const std::string configs = catalogue.root().string();
  const int jobs = static_cast<int>(args.integer(args.spelling("-j", "--jobs"), tbb::this_task_arena::max_concurrency(), 1, 1024));
  const std::size_t n = spec.models.size() * spec.options.size();
  CompareResults results(spec.models.size(), std::vector<CompareCell>(spec.options.size()));
  CardErrors errors;
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  std::atomic<int> done{0};
  // The validation run (error bars) beside the plans: one more job.
  reports::for_each_in_parallel(jobs, n + 1, [&](std::size_t i) {
    if (i == n) {
      if (!args.flag("--no-error-bars")) errors = card_errors(configs);
    } else {
      results[i / spec.options.size()][i % spec.options.size()] =
          plan_cell(spec, spec.options[i % spec.options.size()], spec.model_refs[i / spec.options.size()], configs);
    }
    const int d = ++done;
    if (progress) std::cerr << "\r  compared " << d << "/" << n + 1 << (d == static_cast<int>(n + 1) ? "\n" : "") << std::flush;
  });
  for (std::size_t m = 0; m < spec.models.size(); ++m)
    for (std::size_t o = 0; o < spec.options.size(); ++o) attach_errors(results[m][o], spec.options[o], errors);
  const std::vector<std::string> answer = compare_conclusion(spec, results);

  if (auto dir = args.get("--report")) {
    std::error_code ec;
    fs::create_directories(*dir, ec);
    if (ec) throw WriteError("cannot create " + *dir + ": " + ec.message());
    const std::string md = markdown(spec, results, answer);
    for (const auto& [file, body] : {std::pair{"compare.md", md}, std::pair{"compare.html", html(spec, md)}})
      if (auto st = io::write_file((fs::path(*dir) / file).string(), body); !st) throw WriteError(st.error().message);
  }
  if (args.flag("--json")) {
    write_json(spec, results, answer);
    return 0;
  }
  std::cout << "vramsim compare: " << spec.name << " (" << spec.models.size() << " model" << (spec.models.size() > 1 ? "s" : "") << " x "
            << spec.options.size() << " options; each with plan's best " << spec.engine << " flags)\n";
  if (!spec.question.empty()) std::cout << "  " << spec.question << "\n";
  std::cout << "\n  The answer:\n";
  for (const auto& p : answer) std::cout << "    " << p << "\n";
  for (std::size_t m = 0; m < spec.models.size(); ++m) {
    std::cout << "\n  " << spec.models[m] << "\n";
    const auto t = table(spec, results[m]);
    std::vector<std::size_t> width(t.front().size(), 0);
    for (const auto& row : t)
      for (std::size_t k = 0; k + 2 < row.size(); ++k) width[k] = std::max(width[k], row[k].size());
    for (const auto& row : t) {
      std::cout << "   ";
      for (std::size_t k = 0; k < row.size(); ++k) {
        const bool last_two = k + 2 >= row.size();
        std::cout << " " << (last_two || k == 0 ? row[k] : std::string(width[k] - row[k].size(), ' ') + row[k]);
        if (k == 0) std::cout << std::string(width[0] - row[0].size(), ' ');
        if (last_two && k + 1 < row.size()) std::cout << " |";
      }
      std::cout << "\n";
    }
  }
  if (auto dir = args.get("--report")) std::cout << "\n  report: " << (fs::path(*dir) / "compare.html").string() << "\n";
  return 0;
}

}  // namespace vramsim::cli
