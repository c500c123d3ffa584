#pragma once
/// An input file read a chunk at a time, so that a reader keeps only what it needs of it: bounded (the bytes
/// read, inflated when the file is gzipped), never blocked for ever on a pipe no one writes to, and never taking
/// a directory for a file. read_input_file() and the trace readers read through it.

#include <cstddef>
#include <memory>
#include <string>

namespace hetsim {

/// How long a pipe given as an input (`<(zcat x.gz)`, a named FIFO) may stay silent before it is refused: a
/// FIFO no process writes to would otherwise be waited on for ever. HETSIM_SILENT_PIPE_S (0.01 to 3600 seconds)
/// sets another bound for the process: longer for a writer that takes its time, shorter for a harness.
constexpr double kSilentPipeSeconds = 30;
double silent_pipe_seconds();

class InputStream {
public:
  /// Opens `file` (an InputError naming it when it cannot be opened or is a directory). With `inflate`, a file
  /// that begins as gzip does (1f 8b) is inflated as it is read. Past `bound` bytes (inflated) a read throws.
  InputStream(std::string file, std::size_t bound, bool inflate = false, double silent_pipe_s = silent_pipe_seconds());
  ~InputStream();
  InputStream(const InputStream&)            = delete;
  InputStream& operator=(const InputStream&) = delete;

  /// Up to `size` bytes into `buffer`; 0 at the end of the file. InputError past the bound, on a silent pipe,
  /// a read error or a corrupt gzip stream.
  std::size_t read(char* buffer, std::size_t size);

  const std::string& file() const { return file_; }
  /// The file as messages show it: escaped when its name holds a control character.
  std::string shown() const;
  /// Bytes handed out so far (inflated).
  std::size_t consumed() const { return consumed_; }

private:
  void start(bool inflate);
  std::size_t read_raw(char* buffer, std::size_t size);
  std::size_t read_inflated(char* buffer, std::size_t size);

  std::string file_;
  std::size_t bound_;
  double silent_pipe_s_;
  int fd_    = -1;
  bool pipe_ = false;
  std::size_t consumed_ = 0;
  std::string pending_; ///< bytes read to tell gzip from plain text, handed out first
  struct Gzip;
  std::unique_ptr<Gzip> gzip_; ///< set while reading a gzipped file
};

} // namespace hetsim
