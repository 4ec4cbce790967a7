#include "core/config_tree.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>

namespace vramsim::config {

std::string to_string(const Origin& origin) {
  if (origin.line <= 0) return origin.source;
  return origin.source + ":" + std::to_string(origin.line) + ":" + std::to_string(origin.column);
}

std::string resolve_path(const Origin& origin, const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_relative() && origin.line > 0) p = std::filesystem::path(origin.source).parent_path() / p;
  return p.lexically_normal().string();
}

std::string printable(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && !(keep_newlines && (c == '\n' || c == '\t'))) || u == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

Node Node::scalar(std::string text, Origin origin) {
  Node n;
  n.kind_ = Kind::Scalar;
  n.text_ = std::move(text);
  n.origin_ = std::move(origin);
  return n;
}

Node Node::map(Origin origin) {
  Node n;
  n.kind_ = Kind::Map;
  n.origin_ = std::move(origin);
  return n;
}

const Node* Node::find(std::string_view key) const {
  for (const auto& [k, v] : entries_)
    if (k == key) return &v;
  return nullptr;
}

Node* Node::find(std::string_view key) {
  for (auto& [k, v] : entries_)
    if (k == key) return &v;
  return nullptr;
}

Node& Node::set(std::string key, Node value) {
  if (kind_ != Kind::Map) throw std::logic_error("Node::set on a non-map");
  if (Node* existing = find(key)) {
    *existing = std::move(value);
    return *existing;
  }
  entries_.emplace_back(std::move(key), std::move(value));
  return entries_.back().second;
}

void Node::merge_from(const Node& overlay) {
  if (kind_ == Kind::Map && overlay.kind_ == Kind::Map) {
    // Indexes of this map's keys and of the overlay's key marks, so that merging two large
    // mappings is linear rather than a scan per key. Views into this map's keys stay valid:
    // entries_ has room for every key added below, so it is never reallocated meanwhile.
    entries_.reserve(entries_.size() + overlay.entries_.size());
    std::unordered_map<std::string_view, std::size_t> mine;
    mine.reserve(entries_.size());
    for (std::size_t i = 0; i < entries_.size(); ++i) mine.emplace(entries_[i].first, i);
    std::unordered_map<std::string_view, const Origin*> marks;
    marks.reserve(overlay.key_origins_.size());
    for (const auto& [k, o] : overlay.key_origins_) marks.emplace(k, &o);  // the first, as key_origin()
    for (const auto& [key, value] : overlay.entries_) {
      if (auto it = mine.find(key); it != mine.end()) {
        entries_[it->second].second.merge_from(value);
      } else {
        const auto mark = marks.find(key);
        entries_.emplace_back(key, value);
        key_origins_.emplace_back(key, mark != marks.end() ? *mark->second : value.origin());
      }
    }
    return;
  }
  *this = overlay;
}

Origin Node::key_origin(std::string_view key) const {
  for (const auto& [k, o] : key_origins_)
    if (k == key) return o;
  const Node* value = find(key);
  return value ? value->origin() : origin_;
}

void Node::relabel(const Origin& origin) {
  origin_ = origin;
  for (auto& ko : key_origins_) ko.second = origin;
  for (auto& entry : entries_) entry.second.relabel(origin);
  for (auto& item : items_) item.relabel(origin);
}

std::string Node::describe() const {
  switch (kind_) {
    case Kind::Null: return "nothing";
    case Kind::Scalar: {
      // A whole file read as one value (a text or binary file where YAML was expected): its
      // first line, cut short, rather than the file in the message.
      constexpr std::size_t kMax = 60;
      const std::size_t newline = text_.find('\n');
      // Built by appending: GCC 12 at -O3 warns falsely (-Wrestrict) on `"\"" + std::string`.
      std::string quoted(1, '"');
      if (newline == std::string::npos && text_.size() <= kMax + 20) return (quoted += printable(text_)) += '"';
      const std::size_t lines = static_cast<std::size_t>(std::count(text_.begin(), text_.end(), '\n')) +
                                (text_.empty() || text_.back() == '\n' ? 0 : 1);
      (quoted += printable(text_.substr(0, std::min(newline, kMax)))) += "...\" (";
      quoted += newline == std::string::npos ? std::to_string(text_.size()) + " characters" : std::to_string(lines) + " lines";
      return quoted += ')';
    }
    case Kind::Map: return "a mapping";
    case Kind::Sequence: return "a list";
  }
  return "?";
}

// A mapping's keys so far, for the duplicate check, at a constant cost a key: a mapping of up
// to kScanned keys is scanned (every real configuration's), a larger one is indexed by an
// open-addressing table of the keys' hashes and positions (load at most 1/2). A node-based
// hash set cost 1 us a key of a 1,000,000-key mapping in cache misses and allocations, half
// again the parse; a scan per key made the load quadratic (85 s for 160,000 keys).
class KeyIndex {
 public:
  // Whether `key` is among `entries`' keys; when it is not, it is remembered as the key of
  // entries[entries.size()], the entry about to be added.
  bool repeats(const std::vector<Node::Entry>& entries, std::string_view key) {
    const std::size_t next = entries.size();
    if (next < kScanned) {
      for (const auto& entry : entries)
        if (entry.first == key) return true;
      return false;
    }
    if (slots_.empty()) {
      slots_.assign(4 * kScanned, Slot{});
      for (std::size_t i = 0; i < next; ++i) place(hash(entries[i].first), i);
    } else if (2 * (next + 1) > slots_.size()) {
      std::vector<Slot> old(2 * slots_.size(), Slot{});
      old.swap(slots_);
      for (const Slot& slot : old)
        if (slot.position != 0) place(slot.hash, slot.position - 1);
    }
    const std::size_t h = hash(key);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask; slots_[i].position != 0; i = (i + 1) & mask)
      if (slots_[i].hash == h && entries[slots_[i].position - 1].first == key) return true;
    place(h, next);
    return false;
  }

 private:
  static constexpr std::size_t kScanned = 16;
  struct Slot {
    std::size_t hash = 0;
    std::size_t position = 0;  // the entry's index + 1; 0: an empty slot
  };
  static std::size_t hash(std::string_view key) { return std::hash<std::string_view>{}(key); }
  void place(std::size_t h, std::size_t index) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = h & mask;
    while (slots_[i].position != 0) i = (i + 1) & mask;
    slots_[i] = Slot{h, index + 1};
  }
  std::vector<Slot> slots_;  // a power of two in size
};

// Builds Nodes straight from the YAML parser's events (0-based marks become 1-based origins),
// with no yaml-cpp node tree in between: that tree cost as much again as the parse and held
// ~1 KiB a key. Contract: the same tree, marks and errors as yaml-cpp's own document would
// give, with these bounds: nesting deeper than kMaxNesting, an alias inside its own anchor
// (a cycle), and aliases that expand to more than kMaxAliasValues values in all ("billion
// laughs") are errors at the offending position. Values written out in the file are bounded
// by the input's size (kMaxInputBytes), not counted.
class TreeBuilder : public YAML::EventHandler {
 public:
  static constexpr std::size_t kMaxAliasValues = 1'000'000;

  struct Failure {
    std::string message;
  };

  explicit TreeBuilder(std::string source) : source_(std::move(source)) {}

  // The document's root; a Null without position when the text held no document.
  Node take_root() {
    if (root_) return std::move(*root_);
    Node none;
    none.origin_ = Origin{source_, 0, 0};
    return none;
  }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Node n;
    n.origin_ = origin(mark);
    complete(std::move(n), 1, 0, anchor, mark);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    Node n = Node::scalar(value, origin(mark));
    n.quoted_ = tag == "!";  // yaml-cpp's non-specific tag of a quoted (non-plain) scalar
    complete(std::move(n), 1, 0, anchor, mark);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end())
      throw Failure{to_string(origin(mark)) + ": error: an alias inside its own anchor (a cycle): the anchor's value "
                                              "must be complete before an alias names it"};
    const Anchored& target = it->second;
    alias_values_ += target.values;
    if (alias_values_ > kMaxAliasValues)
      throw Failure{to_string(origin(mark)) + ": error: more than " + std::to_string(kMaxAliasValues) +
                    " values once its aliases are expanded"};
    check_depth(stack_.size() + target.height, mark);
    complete(Node(target.node), target.values, target.height, 0, mark);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(Node::Kind::Sequence, mark, anchor);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(Node::Kind::Map, mark, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  // A mapping or list being read: its node, its anchor, and for a mapping the key read last
  // (a value is awaited) and the index of its keys so far.
  struct Frame {
    Node node;
    YAML::anchor_t anchor = 0;
    YAML::Mark mark;
    std::size_t values = 1;  // this node and everything below it
    std::size_t height = 0;  // levels below it
    std::optional<std::pair<std::string, Origin>> key;
    KeyIndex keys;
  };
  // A completed anchored value, for its aliases: a copy, its size and its height.
  struct Anchored {
    Node node;
    std::size_t values = 1;
    std::size_t height = 0;
  };

  void check_depth(std::size_t depth, const YAML::Mark& mark) const {
    if (depth > static_cast<std::size_t>(kMaxNesting))
      throw Failure{to_string(origin(mark)) + ": error: nested more than " + std::to_string(kMaxNesting) +
                    " levels deep (no configuration needs more than a few)"};
  }

  void open(Node::Kind kind, const YAML::Mark& mark, YAML::anchor_t anchor) {
    check_depth(stack_.size() + 1, mark);
    if (!stack_.empty()) expect_not_key(stack_.back(), mark);
    Frame frame;
    frame.node.kind_ = kind;
    frame.node.origin_ = origin(mark);
    frame.anchor = anchor;
    frame.mark = mark;
    stack_.push_back(std::move(frame));
  }

  void close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    complete(std::move(frame.node), frame.values, frame.height, frame.anchor, frame.mark);
  }

  // A mapping's key must be a plain name: a mapping, a list or nothing as a key is refused.
  void expect_not_key(const Frame& parent, const YAML::Mark& mark) const {
    if (parent.node.kind_ == Node::Kind::Map && !parent.key)
      throw Failure{to_string(origin(mark)) + ": error: keys must be plain names"};
  }

  // A value read whole: recorded for its anchor, then given to the mapping or list that holds
  // it (as a key or as a value), or made the root.
  void complete(Node n, std::size_t values, std::size_t height, YAML::anchor_t anchor, const YAML::Mark& mark) {
    if (anchor != 0) anchors_.insert_or_assign(anchor, Anchored{n, values, height});
    if (stack_.empty()) {
      root_ = std::move(n);
      return;
    }
    Frame& parent = stack_.back();
    parent.values += values;
    parent.height = std::max(parent.height, height + 1);
    if (parent.node.kind_ == Node::Kind::Sequence) {
      parent.node.items_.push_back(std::move(n));
      return;
    }
    if (!parent.key) {
      if (!n.is_scalar()) throw Failure{to_string(origin(mark)) + ": error: keys must be plain names"};
      if (parent.keys.repeats(parent.node.entries_, n.text_))
        throw Failure{to_string(origin(mark)) + ": error: duplicate key \"" + n.text_ + "\""};
      parent.key.emplace(std::move(n.text_), std::move(n.origin_));
      return;
    }
    parent.node.key_origins_.emplace_back(parent.key->first, std::move(parent.key->second));
    parent.node.entries_.emplace_back(std::move(parent.key->first), std::move(n));
    parent.key.reset();
  }

  Origin origin(const YAML::Mark& m) const {
    if (m.is_null()) return Origin{source_, 0, 0};
    return Origin{source_, m.line + 1, m.column + 1};
  }

  std::string source_;
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  std::size_t alias_values_ = 0;
  std::optional<Node> root_;
};

namespace {

// Whether a YAML document's events hold anything but a null (a bare `---` line holds nothing),
// and where it starts.
class DocumentProbe : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { content = true; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override { content = true; }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    content = true;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    content = true;
  }
  void OnMapEnd() override {}
  YAML::Mark start;
  bool content = false;
};

// Where the text's second document starts, when it has one with content: the parser, past the
// first document, is asked for one more (never looped to the end: some malformed input makes
// yaml-cpp's document loop run without end).
std::optional<YAML::Mark> second_document(YAML::Parser& parser, std::string_view text) {
  // A second document follows a marker line (`---`, or `...` closing the first): text with
  // neither, nearly every file and every --set value, is not asked again.
  if (text.find("---") == std::string_view::npos && text.find("...") == std::string_view::npos) return std::nullopt;
  DocumentProbe second;
  if (!parser.HandleNextDocument(second) || !second.content) return std::nullopt;
  return second.start;
}

}  // namespace

Result<Node> parse_yaml(std::string_view text, const std::string& source) {
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    TreeBuilder builder(source);
    parser.HandleNextDocument(builder);
    // A file is one document: a second one (after a `---` line) would be ignored.
    if (const auto second = second_document(parser, text)) {
      const Origin where{source, second->line + 1, second->column + 1};
      return Error{to_string(where) + ": error: a second YAML document (after a `---` line): a configuration file holds one"};
    }
    return builder.take_root();
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own guard against a stack overflow: its message is only "bad file".
    Origin where{source, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1};
    return Error{to_string(where) + ": error: nested more than " + std::to_string(kMaxNesting) +
                 " levels deep (no configuration needs more than a few)"};
  } catch (const YAML::Exception& e) {
    Origin where{source, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1};
    return Error{to_string(where) + ": error: malformed YAML: " + e.msg};
  } catch (const TreeBuilder::Failure& f) {
    return Error{f.message};
  }
}

Status check_input_file(const std::string& path, std::uintmax_t max_bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return Error{path + ": error: cannot open file (no such file)"};
  if (std::filesystem::is_directory(status)) return Error{path + ": error: is a directory, not a file"};
  // A device (/dev/zero), a FIFO or a socket would be read without end, or block forever.
  if (!std::filesystem::is_regular_file(status))
    return Error{path + ": error: not a regular file (a device, FIFO or socket); give a file"};
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Error{path + ": error: cannot read the file's size: " + ec.message()};
  if (size > max_bytes)
    return Error{path + ": error: " + std::to_string(size) + " bytes: larger than the " +
                 std::to_string(max_bytes / (1024 * 1024)) + " MiB an input file may have (no configuration comes near)"};
  return Ok{};
}

Result<Node> load_yaml_file(const std::string& path) {
  if (auto checked = check_input_file(path); !checked) return checked.error();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": error: cannot open file"};
  std::ostringstream text;
  text << in.rdbuf();
  return parse_yaml(text.str(), path);
}

Status apply_override(Node& root, std::string_view assignment, std::string_view spelled_as) {
  const Origin cli{spelled_as.empty() ? "--set " + std::string(assignment) : std::string(spelled_as), 0, 0};
  auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return Error{"error: --set expects key.path=value, got \"" + std::string(assignment) + "\""};
  std::string_view path = assignment.substr(0, eq);
  std::string_view value_text = assignment.substr(eq + 1);
  // A key path far deeper than any configuration's would only build a tree as deep (each
  // level merged and destroyed recursively): refused before anything is built.
  if (const auto components = static_cast<std::size_t>(std::count(path.begin(), path.end(), '.')) + 1;
      components > kMaxSetComponents) {
    const std::string option = spelled_as.empty() ? "--set" : std::string(spelled_as.substr(0, 64));
    return Error{"error: " + option + ": the key \"" + std::string(path.substr(0, 60)) + "...\" has " +
                 std::to_string(components) + " dot-separated components; at most " +
                 std::to_string(kMaxSetComponents) + " (no configuration key is nested that deep)"};
  }

  auto parsed = parse_yaml(value_text, cli.source);
  if (!parsed) return Error{"error: " + (spelled_as.empty() ? "--set " + std::string(path) : std::string(spelled_as)) +
                            ": the value is not valid YAML: " +
                            std::string(value_text)};
  Node value = std::move(parsed).value();
  // Values from the command line carry the override itself as their origin.
  value.relabel(cli);

  if (!root.is_map()) root = Node::map(Origin{root.origin().source, 0, 0});
  Node* cursor = &root;
  std::size_t start = 0;
  while (true) {
    auto dot = path.find('.', start);
    std::string key(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (key.empty()) return Error{"error: --set: empty key in \"" + std::string(path) + "\""};
    if (dot == std::string_view::npos) {
      Node replacement = value;  // `--set key=` gives a null value: the key counts as unset
      Node* existing = cursor->find(key);
      if (existing && existing->is_map() && replacement.is_map())
        existing->merge_from(replacement);
      else
        cursor->set(key, std::move(replacement));
      return Ok{};
    }
    Node* next = cursor->find(key);
    if (!next) {
      next = &cursor->set(key, Node::map(cli));
    } else if (next->is_scalar() && !next->text().empty()) {
      // `gpu: rtx-4090` overridden by `--set gpu.memory.capacity=48GiB`: a catalogue name
      // becomes `{preset: rtx-4090}` so that the override can refine it. The mapping is the
      // override's making, so a complaint about it (`--set workload.requests.x=5` makes a number
      // a mapping) names the --set, not the file's line; the name keeps its own origin.
      Node preset = Node::map(cli);
      preset.set("preset", *next);
      *next = std::move(preset);
    } else if (next->is_sequence()) {
      // A list's items are not addressed by --set: replacing the list by a map would turn a
      // typo into a misleading error far from it.
      return Error{"error: --set " + std::string(path) + ": " + std::string(path.substr(0, dot)) +
                   " is a list; --set can replace it whole (" + std::string(path.substr(0, dot)) +
                   "=[...]) but not reach into one item"};
    } else if (!next->is_map()) {
      *next = Node::map(cli);
    }
    cursor = next;
    start = dot + 1;
  }
}

}  // namespace vramsim::config
