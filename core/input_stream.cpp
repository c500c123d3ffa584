#include "core/input_stream.hpp"

#include "core/error.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

namespace hetsim {

/// zlib's state, with the compressed bytes read but not yet inflated.
struct InputStream::Gzip {
  z_stream z{};
  std::vector<unsigned char> in = std::vector<unsigned char>(std::size_t{1} << 16);
  bool ended                    = false; ///< the compressed input is all read
  bool between_members          = false; ///< a member ended and no other has begun
  ~Gzip() { inflateEnd(&z); }
};

double silent_pipe_seconds()
{
  static const double seconds = [] {
    const char* text = std::getenv("HETSIM_SILENT_PIPE_S");
    if (!text)
      return kSilentPipeSeconds;
    char* end          = nullptr;
    const double value = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(value >= 0.01 && value <= 3600))
      throw InputError(std::string("environment: HETSIM_SILENT_PIPE_S: expected seconds from 0.01 to 3600, got ") +
                       quote(text));
    return value;
  }();
  return seconds;
}

InputStream::InputStream(std::string file, std::size_t bound, bool inflate, double silent_pipe_s)
    : file_(std::move(file)), bound_(bound), silent_pipe_s_(silent_pipe_s)
{
  // Non-blocking open: opening a named pipe for reading would otherwise wait for a writer that may never come.
  fd_ = ::open(file_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0)
    throw InputError(shown() + ": cannot open file (" + std::strerror(errno) + ")");
  try {
    start(inflate);
  } catch (...) { // the destructor does not run for a constructor that throws
    ::close(fd_);
    throw;
  }
}

void InputStream::start(bool inflate)
{
  struct stat info {};
  if (::fstat(fd_, &info) != 0)
    throw InputError(shown() + ": cannot read file (" + std::strerror(errno) + ")");
  if (S_ISDIR(info.st_mode))
    throw InputError(shown() + ": is a directory; expected a file");
  pipe_ = S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode);
  if (!pipe_) // a file or a device: plain blocking reads
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  if (!inflate)
    return;
  gzip_ = std::make_unique<Gzip>();
  // Two bytes tell gzip from anything else (JSON begins with '{', '[' or white space); a pipe may give one.
  std::size_t got = 0;
  for (std::size_t more = 1; got < 2 && more > 0; got += more)
    more = read_raw(reinterpret_cast<char*>(gzip_->in.data()) + got, 2 - got);
  gzip_->z.next_in  = gzip_->in.data();
  gzip_->z.avail_in = static_cast<uInt>(got);
  gzip_->ended      = got < 2;
  if (got < 2 || gzip_->in[0] != 0x1f || gzip_->in[1] != 0x8b) {
    pending_ = std::string(reinterpret_cast<char*>(gzip_->in.data()), got); // plain: handed out first
    gzip_.reset();
    return;
  }
  if (inflateInit2(&gzip_->z, 16 + MAX_WBITS) != Z_OK) // 16: a gzip header and trailer
    throw InputError(shown() + ": cannot inflate (zlib could not start)");
}

InputStream::~InputStream()
{
  if (fd_ >= 0)
    ::close(fd_);
}

std::string InputStream::shown() const
{
  return shown_path(file_);
}

std::size_t InputStream::read_raw(char* buffer, std::size_t size)
{
  for (;;) {
    if (pipe_) {
      pollfd ready{fd_, POLLIN, 0};
      const int waited = ::poll(&ready, 1, static_cast<int>(silent_pipe_s_ * 1000));
      if (waited == 0) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", silent_pipe_s_);
        throw InputError(shown() + ": a pipe nothing was written to for " + seconds +
                         " s; expected a file, or a pipe its writer fills");
      }
      if (waited < 0) {
        if (errno == EINTR)
          continue;
        throw InputError(shown() + ": cannot read file (" + std::strerror(errno) + ")");
      }
    }
    const ssize_t got = ::read(fd_, buffer, size);
    if (got >= 0)
      return static_cast<std::size_t>(got);
    if (errno != EINTR && errno != EAGAIN)
      throw InputError(shown() + ": cannot read file (" + std::strerror(errno) + ")");
  }
}

std::size_t InputStream::read_inflated(char* buffer, std::size_t size)
{
  size        = std::min<std::size_t>(size, std::numeric_limits<uInt>::max()); // zlib counts in uInt
  z_stream& z = gzip_->z;
  z.next_out  = reinterpret_cast<unsigned char*>(buffer);
  z.avail_out = static_cast<uInt>(size);
  while (z.avail_out == size) {
    if (z.avail_in == 0 && !gzip_->ended) {
      const std::size_t got = read_raw(reinterpret_cast<char*>(gzip_->in.data()), gzip_->in.size());
      z.next_in             = gzip_->in.data();
      z.avail_in            = static_cast<uInt>(got);
      gzip_->ended          = got == 0;
    }
    if (z.avail_in == 0 && gzip_->ended) {
      if (gzip_->between_members)
        break; // the end of the last member: the end of the file
      throw InputError(shown() + ": cannot read (a truncated gzip file)");
    }
    if (gzip_->between_members && z.next_in[0] != 0x1f) { // what follows is no member: ignored, as gzip does
      z.avail_in   = 0;
      gzip_->ended = true;
      break;
    }
    const int status = ::inflate(&z, Z_NO_FLUSH);
    if (status == Z_STREAM_END) {
      // Concatenated gzip members (what `cat a.gz b.gz` makes) inflate one after the other, as gzip does.
      gzip_->between_members = true;
      ::inflateReset(&z);
      continue;
    }
    if (status != Z_OK)
      throw InputError(shown() + ": cannot read (a corrupt gzip file: " + (z.msg ? z.msg : "zlib error") + ")");
    gzip_->between_members = false;
  }
  return size - z.avail_out;
}

std::size_t InputStream::read(char* buffer, std::size_t size)
{
  std::size_t got = 0;
  if (!pending_.empty()) {
    got = std::min(size, pending_.size());
    std::memcpy(buffer, pending_.data(), got);
    pending_.erase(0, got);
  } else {
    got = gzip_ ? read_inflated(buffer, size) : read_raw(buffer, size);
  }
  consumed_ += got;
  if (consumed_ > bound_)
    throw InputError(shown() + ": expected a file of at most " + std::to_string(bound_ >> 20) + " MiB" +
                     (gzip_ ? " inflated" : "") + ", got more");
  return got;
}

} // namespace hetsim
