#include "traces/event_stream.hpp"

#include "core/error.hpp"
#include "core/input_stream.hpp"

#include <sys/stat.h>

#include <exception>
#include <streambuf>
#include <vector>

namespace hetsim::traces {
namespace {

using nlohmann::json;

/// Deeper nesting than any trace has (the profiler's deepest is an operator's list of input shapes).
constexpr std::size_t kMaxDepth = 64;

/// The file as nlohmann's parser reads it (a character at a time through sbumpc), which also bounds the bytes
/// of one value: a single string or a run of white space of gigabytes would otherwise be gathered whole.
class StreamBuffer final : public std::streambuf {
public:
  explicit StreamBuffer(InputStream& in) : in_(in), buffer_(std::size_t{1} << 16) {}

  /// Bytes the parser has taken so far.
  std::size_t position() const { return before_buffer_ + static_cast<std::size_t>(gptr() - eback()); }
  /// Where the value being read began: past kMaxTraceValueBytes from here, reading stops.
  void mark() { mark_ = position(); }
  /// What stopped the reading (an InputError of the stream, or the value bound), if anything did.
  std::exception_ptr error;

protected:
  int_type underflow() override
  {
    before_buffer_ += static_cast<std::size_t>(egptr() - eback());
    setg(buffer_.data(), buffer_.data(), buffer_.data());
    if (before_buffer_ - mark_ > kMaxTraceValueBytes) {
      error = std::make_exception_ptr(InputError(
          in_.shown() + ": expected each event (and each member beside traceEvents) to be at most " +
          std::to_string(kMaxTraceValueBytes >> 20) + " MiB of JSON, got a longer one near byte " +
          std::to_string(mark_)));
      return traits_type::eof();
    }
    std::size_t got = 0;
    try {
      got = in_.read(buffer_.data(), buffer_.size());
    } catch (...) {
      error = std::current_exception();
      return traits_type::eof();
    }
    if (got == 0)
      return traits_type::eof();
    setg(buffer_.data(), buffer_.data(), buffer_.data() + got);
    return traits_type::to_int_type(*gptr());
  }

private:
  InputStream& in_;
  std::vector<char> buffer_;
  std::size_t before_buffer_ = 0; ///< bytes of the buffers before the current one
  std::size_t mark_          = 0;
};

/// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string reason(const nlohmann::detail::exception& e)
{
  const std::string what = e.what();
  const auto pos         = what.find("] ");
  return pos == std::string::npos ? what : what.substr(pos + 2);
}

/// Builds each event (and each other top-level member) from the parser's SAX calls, hands events out as they
/// end and forgets them.
class EventHandler final : public nlohmann::json_sax<json> {
public:
  using OnEvent = std::function<void(const json&, std::size_t)>;
  EventHandler(StreamBuffer& buffer, std::string shown, const OnEvent& on_event)
      : buffer_(buffer), shown_(std::move(shown)), on_event_(on_event)
  {
  }

  json members = json::object();
  bool saw_events = false;

  bool null() override { return scalar(nullptr); }
  bool boolean(bool value) override { return scalar(value); }
  bool number_integer(number_integer_t value) override { return scalar(value); }
  bool number_unsigned(number_unsigned_t value) override { return scalar(value); }
  bool number_float(number_float_t value, const string_t&) override { return scalar(value); }
  bool string(string_t& value) override { return scalar(std::move(value)); }
  bool binary(binary_t& value) override { return scalar(json::binary(std::move(value))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& name) override
  {
    if (building()) {
      if (open_.back()->contains(name))
        fail("expected each key once in an object, got " + quote(name) + " twice");
      key_ = std::move(name);
    } else {
      member_ = std::move(name);
      buffer_.mark();
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override
  {
    if (buffer_.error) // the stream stopped (a bound, a read error): that is the reason, not the truncated JSON
      std::rethrow_exception(buffer_.error);
    throw InputError(shown_ + ": not a JSON trace (invalid JSON: " + reason(e) + ")");
  }

private:
  /// Where the parser is outside the value being built.
  enum class Level { document, root, events, done };

  [[noreturn]] void fail(const std::string& what) const
  {
    const std::string where = level_ == Level::events ? "traceEvents[" + std::to_string(index_) + "]"
                              : member_.empty()       ? "(top level)"
                                                      : quote(member_);
    throw InputError(shown_ + ": " + where + ": " + what);
  }

  bool building() const { return !open_.empty(); }

  json& insert(json value)
  {
    json& container = *open_.back();
    if (container.is_object()) {
      json& slot = container[key_];
      slot       = std::move(value);
      return slot;
    }
    container.push_back(std::move(value));
    return container.back();
  }

  bool scalar(json value)
  {
    if (building()) {
      insert(std::move(value));
      return true;
    }
    value_ = std::move(value);
    return finish();
  }

  bool open(json container)
  {
    if (building()) {
      if (open_.size() >= kMaxDepth)
        fail("expected at most " + std::to_string(kMaxDepth) + " levels of nesting");
      open_.push_back(&insert(std::move(container)));
      return true;
    }
    if (level_ == Level::document) { // the top level: an object with traceEvents, or the events themselves
      bare_array_ = container.is_array();
      level_      = bare_array_ ? Level::events : Level::root;
      saw_events  = saw_events || bare_array_;
      buffer_.mark();
      return true;
    }
    if (level_ == Level::root && member_ == "traceEvents" && container.is_array()) {
      if (saw_events)
        fail("expected each key once in an object, got it twice");
      level_     = Level::events;
      saw_events = true;
      buffer_.mark();
      return true;
    }
    value_ = std::move(container);
    open_.push_back(&value_);
    return true;
  }

  bool close()
  {
    if (building()) {
      open_.pop_back();
      return building() ? true : finish();
    }
    level_ = level_ == Level::events && !bare_array_ ? Level::root : Level::done;
    buffer_.mark();
    return true;
  }

  /// A whole value at the level where values are gathered.
  bool finish()
  {
    if (level_ == Level::events) {
      on_event_(value_, index_++);
    } else if (level_ == Level::root) {
      if (member_ == "traceEvents")
        fail("expected an array of events");
      if (members.contains(member_))
        fail("expected each key once in an object, got it twice");
      members[member_] = std::move(value_);
    } else {
      fail("expected an object with the array traceEvents, as Chrome traces are written");
    }
    value_ = nullptr;
    buffer_.mark();
    return true;
  }

  StreamBuffer& buffer_;
  std::string shown_;
  const OnEvent& on_event_;
  Level level_     = Level::document;
  bool bare_array_ = false;
  std::vector<json*> open_; ///< the containers of the value being built, innermost last
  json value_;
  std::string key_;    ///< the key of the next member of the innermost object being built
  std::string member_; ///< the top-level member being read
  std::size_t index_ = 0;
};

} // namespace

TraceMembers read_trace_events(const std::string& file,
                               const std::function<void(const nlohmann::json& event, std::size_t index)>& on_event)
{
  InputStream in(file, kMaxTraceBytes, true);
  StreamBuffer buffer(in);
  std::istream stream(&buffer);
  EventHandler handler(buffer, in.shown(), on_event);
  json::sax_parse(stream, &handler);
  if (buffer.error)
    std::rethrow_exception(buffer.error);
  if (!handler.saw_events)
    throw InputError(in.shown() + ": traceEvents: expected the array of events a Chrome trace holds");
  return std::move(handler.members);
}

std::string trace_start(const std::string& file, std::size_t bytes)
{
  // Its start tells the kind of trace, then the file is read again from the beginning: a pipe cannot be.
  struct stat info {};
  if (::stat(file.c_str(), &info) == 0 && (S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode)))
    throw InputError(shown_path(file) + ": is a pipe; a trace is read twice (its start tells its kind, then its "
                                        "events are read), so give a file, plain or gzipped");
  InputStream in(file, kMaxTraceBytes, true);
  std::string text(bytes, '\0');
  std::size_t have = 0;
  while (have < bytes) {
    const std::size_t got = in.read(text.data() + have, bytes - have);
    if (got == 0)
      break;
    have += got;
  }
  text.resize(have);
  return text;
}

void KeptBytes::add(std::size_t bytes)
{
  kept_ += bytes;
  if (kept_ > kMaxKeptTraceBytes)
    throw InputError(shown_path(file_) + ": holds more events than HetSim keeps in memory (" +
                     std::to_string(kMaxKeptTraceBytes >> 20) +
                     " MiB of them); profile fewer steps, or split the trace");
}

} // namespace hetsim::traces
