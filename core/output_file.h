// Writing output files so that a failure is never silent and never leaves a half-written or
// foreign file behind: the one atomic file writer every command uses (results store, report,
// run's outputs, import-model, calibrate's records), and a checked stream over a descriptor
// (stdout).
//
// An AtomicFile writes to a temporary file created beside the target with mkstemp (O_CREAT |
// O_EXCL, an unpredictable name, never through a symlink planted under that name), then
// fsyncs it and renames it over the target: a reader sees the old file or the new one, a
// failure (a full disk, a refusal before commit) leaves the old file as it was and no temporary
// behind. The path the user named is followed to the file it names (a symlink stays, its target
// is replaced); an existing path that is not a regular file (/dev/stdout, /dev/null, a FIFO) is
// written directly. Every failure is an Error with the system's reason (strerror of the real
// errno).
#pragma once

#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace vramsim::io {

// A buffered streambuf over a file descriptor that remembers the first failed write's errno
// (EINTR retried, short writes completed). `line_buffered`: flush at each newline (a terminal).
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd, bool line_buffered = false);
  ~FdBuf() override;
  FdBuf(const FdBuf&) = delete;
  FdBuf& operator=(const FdBuf&) = delete;

  // 0 while every write succeeded, else the errno of the first that failed.
  int error() const { return error_; }
  // Writes what is buffered; false (error() says why) when a write failed now or before.
  bool flush_all();
  int fd() const { return fd_; }
  // Forgets the descriptor (closed by its owner) and what is buffered: nothing more is written.
  void detach();

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  bool write_out(const char* data, std::size_t size);
  int fd_;
  bool line_buffered_;
  int error_ = 0;
  std::vector<char> buffer_;
};

class AtomicFile {
 public:
  // Creates the temporary file for `path`. Error "PATH: error: cannot write: REASON".
  static Result<std::unique_ptr<AtomicFile>> open(const std::string& path);
  ~AtomicFile();  // removes the temporary file unless commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return stream_; }
  // Flushes, fsyncs and renames the temporary file over the target (a direct write: flushes).
  // On failure the temporary file is removed and the target left as it was.
  Status commit();
  // Drops what was written: the temporary file is removed, the target left as it was.
  void discard();

  // The file that is replaced: the named path with its links followed (two outputs naming the
  // same file have the same target).
  const std::string& target() const { return target_; }
  const std::string& path() const { return path_; }
  // The temporary file's path (empty for a direct write).
  const std::string& temp_path() const { return temp_; }

 private:
  AtomicFile(std::string path, std::string target, std::string temp, int fd);
  Error failure(int err) const;
  std::string path_, target_, temp_;
  int fd_ = -1;
  bool done_ = false;
  FdBuf buf_;
  std::ostream stream_;
};

// Replaces `path` with `text` atomically (AtomicFile).
Status write_file(const std::string& path, std::string_view text);

// "cannot write PATH: REASON" for messages about a failed write.
std::string cannot_write(const std::string& path, int err);

}  // namespace vramsim::io
