#pragma once
// A connection's unread input, read into in place: the socket's bytes land
// where the command reader parses them, with no copy from a read buffer.
//
// The space offered to a read adapts to the client: it starts small (an
// idle or chatty connection holds kMinRead), doubles while reads fill it (a
// pipelining client: up to kMaxRead a read, so that one recv, one reply
// write and one log record serve thousands of commands instead of one
// 64 KiB slice each), and drops to what the client sends once it sends
// little. A command longer than the space grows the buffer to hold it (the
// reader's limits bound that); shrink() gives back a block much larger
// than what is unread and the next read need.
//
// Views into unread() stay valid until the next space() or shrink(): the
// bytes move only there. Neither may be called while a read into the last
// space() is still to come (consume() only moves past bytes, so the read
// lands where the space was).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string_view>

namespace ebb::resp {

class InputBuffer {
 public:
  static constexpr std::size_t kMinRead = 16u << 10;
  static constexpr std::size_t kMaxRead = 256u << 10;

  std::string_view unread() const noexcept { return {data_.get() + begin_, end_ - begin_}; }
  std::size_t size() const noexcept { return end_ - begin_; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t read_size() const noexcept { return read_; }

  void consume(std::size_t n) noexcept { begin_ += std::min(n, size()); }

  // Where the next read goes: at least read_size() bytes after the unread
  // ones (moved to the front, or into a larger block, when the tail is
  // shorter).
  std::span<char> space() {
    if (begin_ == end_) begin_ = end_ = 0;  // drained: from the start again
    if (capacity_ - end_ < read_) {
      const std::size_t unread = size();
      if (begin_ > 0 && capacity_ - unread >= read_) {
        std::memmove(data_.get(), data_.get() + begin_, unread);
      } else {
        const std::size_t grown = std::max(unread + read_, capacity_ * 2);
        auto block = std::make_unique_for_overwrite<char[]>(grown);
        if (unread > 0) std::memcpy(block.get(), data_.get() + begin_, unread);
        data_ = std::move(block);
        capacity_ = grown;
      }
      begin_ = 0;
      end_ = unread;
    }
    return {data_.get() + end_, read_};  // (a read of at most read_: the tail may be longer)
  }

  // `n` bytes were read into space(): a read that filled the space asked
  // for offers twice as much next time; one of less than a quarter of it
  // offers what fits it, doubled (a client that paused after a burst is
  // back to a small read at once).
  void commit(std::size_t n) noexcept {
    end_ += n;
    if (n >= read_) {
      read_ = std::min(read_ * 2, kMaxRead);
    } else if (n < read_ / 4) {
      std::size_t fit = kMinRead;
      while (fit < 2 * n) fit *= 2;
      read_ = fit;
    }
  }

  // Between reads (no read under way): a block more than four times what is
  // unread and the next read need goes, the unread bytes moved to one that
  // fits them and that read (a connection that once pipelined, or read one
  // long command, does not keep its peak). Views into unread() move too.
  void shrink() noexcept {
    const std::size_t unread = size();
    if (capacity_ <= 4 * std::max(read_, unread)) return;
    if (unread == 0) {
      data_.reset();
      capacity_ = begin_ = end_ = 0;
      return;
    }
    const std::size_t fit = unread + read_;
    std::unique_ptr<char[]> block(new (std::nothrow) char[fit]);
    if (!block) return;  // (out of memory: the large block stays)
    std::memcpy(block.get(), data_.get() + begin_, unread);
    data_ = std::move(block);
    capacity_ = fit;
    begin_ = 0;
    end_ = unread;
  }

 private:
  std::unique_ptr<char[]> data_;
  std::size_t capacity_ = 0;
  std::size_t begin_ = 0, end_ = 0;
  std::size_t read_ = kMinRead;
};

}  // namespace ebb::resp
