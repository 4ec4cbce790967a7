#include "core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace vramsim::io {
namespace {
namespace fs = std::filesystem;

constexpr std::size_t kBufferBytes = 64 * 1024;

// The process's umask, read without changing it (umask() would, racing other threads that
// create files): /proc/self/status has it since Linux 4.7; 022 otherwise.
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  return 022;
}

}  // namespace

std::string cannot_write(const std::string& path, int err) {
  return "cannot write " + path + ": " + std::strerror(err);
}

FdBuf::FdBuf(int fd, bool line_buffered) : fd_(fd), line_buffered_(line_buffered), buffer_(kBufferBytes) {
  setp(buffer_.data(), buffer_.data() + buffer_.size());
}

FdBuf::~FdBuf() {
  if (fd_ >= 0) flush_all();
}

void FdBuf::detach() {
  fd_ = -1;
  if (!error_) error_ = EBADF;
  setp(buffer_.data(), buffer_.data() + buffer_.size());
}

bool FdBuf::write_out(const char* data, std::size_t size) {
  if (error_) return false;
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = errno;
      return false;
    }
    if (n == 0) {  // a write that moves nothing: no progress is possible
      error_ = EIO;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool FdBuf::flush_all() {
  const std::size_t pending = static_cast<std::size_t>(pptr() - pbase());
  const bool ok = write_out(pbase(), pending);
  setp(buffer_.data(), buffer_.data() + buffer_.size());  // what failed is dropped: error() stays
  return ok && !error_;
}

FdBuf::int_type FdBuf::overflow(int_type c) {
  if (!flush_all()) return traits_type::eof();
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  *pptr() = traits_type::to_char_type(c);
  pbump(1);
  if (line_buffered_ && traits_type::to_char_type(c) == '\n' && !flush_all()) return traits_type::eof();
  return c;
}

std::streamsize FdBuf::xsputn(const char* s, std::streamsize n) {
  if (error_) return 0;
  const auto size = static_cast<std::size_t>(n);
  if (size <= static_cast<std::size_t>(epptr() - pptr())) {
    std::memcpy(pptr(), s, size);
    pbump(static_cast<int>(n));
  } else if (!flush_all() || !write_out(s, size)) {
    return 0;
  }
  if (line_buffered_ && std::memchr(s, '\n', size) && !flush_all()) return 0;
  return n;
}

int FdBuf::sync() { return flush_all() ? 0 : -1; }

AtomicFile::AtomicFile(std::string path, std::string target, std::string temp, int fd)
    : path_(std::move(path)), target_(std::move(target)), temp_(std::move(temp)), fd_(fd), buf_(fd), stream_(&buf_) {}

Result<std::unique_ptr<AtomicFile>> AtomicFile::open(const std::string& path) {
  std::error_code ec;
  const fs::file_status what = fs::status(path, ec);
  if (fs::is_directory(what)) return Error{"cannot write " + path + ": it is a directory"};
  // The file the path names, links followed: the user named it, and a link stays a link.
  const fs::path resolved = fs::weakly_canonical(path, ec);
  const std::string target = ec || resolved.empty() ? path : resolved.string();
  if (fs::exists(what) && !fs::is_regular_file(what)) {
    // /dev/stdout, /dev/null, a FIFO: written through, never replaced.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return Error{cannot_write(path, errno)};
    return std::unique_ptr<AtomicFile>(new AtomicFile(path, target, "", fd));
  }
  const fs::path parent = fs::path(target).parent_path();
  const std::string name = fs::path(target).filename().string();
  // mkostemp: O_CREAT | O_EXCL with six random characters, mode 0600 until commit.
  std::string leaf = ".";  // appended, not "." + ...: GCC 12's -O3 warns falsely (-Wrestrict) on that form
  leaf += name.substr(0, 200);
  leaf += ".vramsim-XXXXXX";
  std::string temp = ((parent.empty() ? fs::path(".") : parent) / leaf).string();
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return Error{cannot_write(path, errno)};
  return std::unique_ptr<AtomicFile>(new AtomicFile(path, target, temp, fd));
}

AtomicFile::~AtomicFile() {
  if (!done_) discard();
}

void AtomicFile::discard() {
  if (done_) return;
  done_ = true;
  buf_.detach();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

Error AtomicFile::failure(int err) const { return Error{cannot_write(path_, err)}; }

Status AtomicFile::commit() {
  if (done_) return Error{"cannot write " + path_ + ": already closed"};
  stream_.flush();
  if (!buf_.flush_all()) {
    const int err = buf_.error();
    discard();
    return failure(err);
  }
  if (temp_.empty()) {  // a direct write
    done_ = true;
    buf_.detach();
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0 && errno != EINTR) return failure(errno);
    return Ok{};
  }
  // The new file keeps the mode of the file it replaces, else the usual 0666 less the umask.
  struct stat old {};
  const mode_t mode = ::stat(target_.c_str(), &old) == 0 && S_ISREG(old.st_mode) ? (old.st_mode & 07777)
                                                                                  : (0666 & ~current_umask());
  if (::fchmod(fd_, mode) != 0 || ::fsync(fd_) != 0) {
    const int err = errno;
    discard();
    return failure(err);
  }
  buf_.detach();
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0 && errno != EINTR) {
    const int err = errno;
    discard();
    return failure(err);
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    discard();
    return failure(err);
  }
  done_ = true;
  // The rename itself on disk: the directory's entry (best effort; some file systems refuse).
  const std::string dir = fs::path(target_).parent_path().empty() ? "." : fs::path(target_).parent_path().string();
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return Ok{};
}

Status write_file(const std::string& path, std::string_view text) {
  auto file = AtomicFile::open(path);
  if (!file) return file.error();
  (*file)->stream().write(text.data(), static_cast<std::streamsize>(text.size()));
  return (*file)->commit();
}

}  // namespace vramsim::io
