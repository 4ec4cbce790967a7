#include "reports/results_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/output_file.h"
#include "reports/run_metrics.h"

namespace vramsim::reports {
namespace {
namespace fs = std::filesystem;

[[noreturn]] void sys_fail(const std::string& what, const fs::path& p) {
  throw std::runtime_error(what + " " + p.string() + ": " + std::strerror(errno));
}

// An exclusive flock on DIR/.lock for the lifetime of the object.
class DirLock {
 public:
  explicit DirLock(const fs::path& dir) {
    const fs::path p = dir / ".lock";
    fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0) sys_fail("cannot open", p);
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) sys_fail("cannot lock", p);
  }
  ~DirLock() { ::close(fd_); }  // closing releases the lock
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

// Writes `text` as one write() to `p` opened O_APPEND (one record, never interleaved).
// `sync`: on disk before returning (the results themselves; CSV and timings can be rebuilt or lost).
// A short write (a disk filling up) is continued, under the caller's lock, until it completes or
// fails: the reason is then the failing call's own errno (ENOSPC, EFBIG), taken before anything
// else can change it.
void append_line(const fs::path& p, const std::string& text, bool sync = false) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) sys_fail("cannot open", p);
  int err = 0;
  for (std::size_t done = 0; done < text.size() && !err;) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n > 0) done += static_cast<std::size_t>(n);
    else if (n == 0) err = ENOSPC;
    else if (errno != EINTR) err = errno;
  }
  if (!err && sync && ::fdatasync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err && errno != EINTR) err = errno;
  if (err) {
    errno = err;
    sys_fail("cannot append to", p);
  }
}

// Cuts a torn last line (no final newline) off `p`. Call under the lock.
void cut_torn_tail(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  const off_t size = ::lseek(fd, 0, SEEK_END);
  off_t keep = size;
  char c = '\n';
  while (keep > 0 && ::pread(fd, &c, 1, keep - 1) == 1 && c != '\n') --keep;
  if (keep != size && ::ftruncate(fd, keep) != 0) {
    ::close(fd);
    sys_fail("cannot repair", p);
  }
  ::close(fd);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_value(const json::Value* v) {
  if (!v || v->is_null()) return "";
  return csv_field(v->text());
}

}  // namespace

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_atomically(const fs::path& p, const std::string& text) {
  if (auto written = io::write_file(p.string(), text); !written) throw std::runtime_error(written.error().message);
}

std::string point_key(const Point& p) { return json::to_line(p.overrides()); }

json::Value ok_record(const Point& p, const json::Value& summary) {
  json::Value r = json::Value::object();
  r.set("point", p.overrides());
  r.set("index", json::Value::number_text(std::to_string(p.index)));
  r.set("status", json::Value::string("ok"));
  for (const auto& [k, v] : summary.members()) {
    if (k == "sim") {
      json::Value sim = v;
      sim.erase("wall_s");
      r.set(k, sim);
    } else {
      r.set(k, v);
    }
  }
  return r;
}

json::Value failed_record(const Point& p, int exit_code, const std::string& error) {
  json::Value r = json::Value::object();
  r.set("point", p.overrides());
  r.set("index", json::Value::number_text(std::to_string(p.index)));
  r.set("status", json::Value::string("failed"));
  r.set("exit_code", json::Value::number_text(std::to_string(exit_code)));
  r.set("error", json::Value::string(error));
  return r;
}


std::string csv_header(const Study& study) {
  std::string line = "index,status";
  for (const auto& d : study.dimensions)
    for (const auto& a : d.axes) (line += ',') += csv_field(a.key);
  for (const auto m : csv_metric_paths()) (line += ",") += m;
  return line + ",error\n";
}

std::string csv_row(const Study& study, const json::Value& record) {
  std::string line = csv_value(record.find("index"));
  (line += ',') += csv_value(record.find("status"));
  const json::Value* point = record.find("point");
  for (const auto& d : study.dimensions)
    for (const auto& a : d.axes) (line += ',') += csv_value(point ? point->find(a.key) : nullptr);
  for (const auto m : csv_metric_paths()) (line += ',') += csv_value(record.at_path(m));
  ((line += ',') += csv_value(record.find("error"))) += '\n';
  return line;
}

ResultsStore::ResultsStore(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) throw std::runtime_error("cannot create the results directory " + dir_.string());
}

void ResultsStore::open_study(const Study& study) {
  const fs::path p = dir_ / "study.json";
  // A folder that holds files but no study of its own is someone else's: results.csv and the
  // report would overwrite files of the same names (a typo in -o). .lock and the writer's
  // temporary files (".study.json.vramsim-XXXXXX" while another MPI rank writes study.json)
  // are the store's own.
  if (std::error_code ec; !fs::exists(p, ec)) {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      const std::string name = entry.path().filename().string();
      if (name != ".lock" && !(name.starts_with('.') && name.find(".vramsim-") != std::string::npos)) found.push_back(name);
    }
    if (!found.empty()) {
      std::sort(found.begin(), found.end());
      throw std::runtime_error(dir_.string() + " is not empty (it holds " + found.front() +
                               (found.size() > 1 ? " and " + std::to_string(found.size() - 1) + " more" : std::string()) +
                               ") and holds no study.json of a sweep: refusing to write results and a report into it; "
                               "choose a new or empty folder, or an earlier sweep's results directory");
    }
  }
  DirLock lock(dir_);
  const json::Value manifest = study_manifest(study);
  if (fs::exists(p)) {
    // Recorded results are reused only for the same points of the same inputs: the points'
    // overrides, the seed, the fixed overrides and the scenario files' text (the study file's
    // own text may change, e.g. a title, without changing a result). The study file is the
    // first input; the scenarios are compared by text and, where both paths can be found from
    // here, by identity, so that the same study named by another path ("./study.yaml", an
    // absolute path) resumes.
    auto old = json::parse(read_text(p));
    auto differs = [&](const char* key) {
      const json::Value* before = old ? old->find(key) : nullptr;
      const json::Value* now = manifest.find(key);
      if (std::string_view(key) != "inputs") return !before || !now || json::to_line(*before) != json::to_line(*now);
      if (!before || !now || !before->is_array() || before->items().size() != now->items().size()) return true;
      for (std::size_t i = 1; i < now->items().size(); ++i) {
        const json::Value& a = before->items()[i];
        const json::Value& b = now->items()[i];
        const json::Value* text_a = a.find("text");
        const json::Value* text_b = b.find("text");
        const json::Value* path_a = a.find("path");
        const json::Value* path_b = b.find("path");
        if (!text_a || !text_b || !path_a || !path_b || text_a->text() != text_b->text()) return true;
        std::error_code ec;
        if (path_a->text() != path_b->text() && fs::exists(path_a->text(), ec) && fs::exists(path_b->text(), ec) &&
            !fs::equivalent(path_a->text(), path_b->text(), ec))
          return true;
      }
      return false;
    };
    for (const char* key : {"points", "seed", "set", "inputs"})
      if (differs(key))
        throw std::runtime_error(dir_.string() + " holds the results of another study (they differ in: " +
                                 (std::string_view(key) == "inputs" ? std::string("the scenario files (their text, or which files they are)") : std::string(key)) +
                                 "); choose another -o DIR or delete it");
  }
  json::Writer w(true);
  json::write(w, manifest);
  write_atomically(p, w.str() + "\n");
}

std::map<std::string, PointRecord> ResultsStore::load() {
  DirLock lock(dir_);
  return load_locked();
}

std::map<std::string, PointRecord> ResultsStore::load_locked() {
  cut_torn_tail(dir_ / "results.jsonl");
  const std::string text = read_text(dir_ / "results.jsonl");
  std::map<std::string, PointRecord> out;
  std::istringstream lines(text);
  unreadable_.clear();
  std::size_t number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    auto v = json::parse(line);
    const json::Value* point = v && v->is_object() ? v->find("point") : nullptr;
    const json::Value* status = v && v->is_object() ? v->find("status") : nullptr;
    if (!point || !status) {
      unreadable_.push_back(number);
      continue;
    }
    PointRecord rec{*v, json::to_line(*point), status->text() == "ok"};
    // A point run again (a failed one retried) has a later record: it counts, except that a
    // result is never replaced by a failure.
    auto it = out.find(rec.key);
    if (it == out.end()) out.emplace(rec.key, std::move(rec));
    else if (rec.ok || !it->second.ok) it->second = std::move(rec);
  }
  return out;
}

void ResultsStore::append(const Study& study, const json::Value& record, const json::Value& timing) {
  DirLock lock(dir_);
  const fs::path results = dir_ / "results.jsonl";
  cut_torn_tail(results);
  append_line(results, json::to_line(record) + "\n", true);
  const fs::path csv = dir_ / "results.csv";
  if (!fs::exists(csv) || fs::file_size(csv) == 0) append_line(csv, csv_header(study));
  append_line(csv, csv_row(study, record));
  append_line(dir_ / "timings.jsonl", json::to_line(timing) + "\n");
}

void ResultsStore::rewrite_csv(const Study& study) {
  DirLock lock(dir_);
  const auto records = load_locked();
  std::string text = csv_header(study);
  for (const auto& p : study.points()) {
    auto it = records.find(point_key(p));
    if (it != records.end()) text += csv_row(study, it->second.record);
  }
  write_atomically(dir_ / "results.csv", text);
}

Study read_manifest(const fs::path& dir) {
  const fs::path p = dir / "study.json";
  if (!fs::exists(p)) throw std::runtime_error("no " + p.string() + ": not a sweep's results directory");
  auto v = json::parse(read_text(p));
  if (!v) throw std::runtime_error(p.string() + ": " + v.error().message);
  return study_from_manifest(*v);
}

}  // namespace vramsim::reports
