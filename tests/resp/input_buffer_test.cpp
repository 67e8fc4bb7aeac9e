// A RESP connection's input buffer (src/resp/input_buffer.hpp): the bytes
// come out as they went in, whatever the reads' sizes and the consuming;
// the space a read is offered grows for a pipelining client and falls back
// for a slow one; a drained buffer gives back its peak.
#include "src/resp/input_buffer.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

namespace ebb::resp {
namespace {

// Writes `bytes` into the buffer's space, as a read of that many would.
void read_into(InputBuffer& b, std::string_view bytes) {
  const auto space = b.space();
  ASSERT_GE(space.size(), b.read_size());
  ASSERT_LE(bytes.size(), space.size());
  std::memcpy(space.data(), bytes.data(), bytes.size());
  b.commit(bytes.size());
}

TEST(InputBuffer, BytesComeOutInOrderWhateverTheReadsAndConsumes) {
  std::mt19937_64 rng(11);
  InputBuffer b;
  std::string sent, model;  // model: what is unread
  std::size_t next = 0;
  for (int round = 0; round < 3000; ++round) {
    // A read of up to the space offered (often all of it: the offer grows),
    // then some of the unread bytes consumed, sometimes none.
    const std::size_t offered = b.read_size();
    const std::size_t n = rng() % 3 == 0 ? offered : rng() % (offered + 1);
    std::string bytes(n, '\0');
    for (auto& c : bytes) c = static_cast<char>('a' + next++ % 26);
    read_into(b, bytes);
    model += bytes;
    ASSERT_EQ(b.unread(), model) << round;
    const std::size_t eat = rng() % 4 == 0 ? 0 : rng() % (model.size() + 1);
    b.consume(eat);
    model.erase(0, eat);
    ASSERT_EQ(b.unread(), model) << round;
    b.shrink();
    ASSERT_EQ(b.unread(), model) << round;
    ASSERT_LE(b.read_size(), InputBuffer::kMaxRead);
    ASSERT_GE(b.read_size(), InputBuffer::kMinRead);
  }
}

TEST(InputBuffer, TheOfferGrowsWhileReadsFillItAndFallsBackAfter) {
  InputBuffer b;
  EXPECT_EQ(b.read_size(), InputBuffer::kMinRead);
  std::size_t expected = InputBuffer::kMinRead;
  // Full reads: 16, 32, 64, 128, 256 KiB, then no more.
  for (int i = 0; i < 6; ++i) {
    read_into(b, std::string(b.read_size(), 'x'));
    expected = std::min(expected * 2, InputBuffer::kMaxRead);
    EXPECT_EQ(b.read_size(), expected) << i;
    b.consume(b.size());
  }
  EXPECT_EQ(b.read_size(), InputBuffer::kMaxRead);
  // A read of between a quarter and all of the offer keeps it.
  read_into(b, std::string(InputBuffer::kMaxRead / 4, 'y'));
  EXPECT_EQ(b.read_size(), InputBuffer::kMaxRead);
  // A shorter one offers what fits it, doubled: 40 KiB -> 128 KiB, then
  // one byte -> the least at once (a client pausing after a burst).
  read_into(b, std::string(40u << 10, 'w'));
  EXPECT_EQ(b.read_size(), 128u << 10);
  read_into(b, "z");
  EXPECT_EQ(b.read_size(), InputBuffer::kMinRead);
  // Between reads, a block far larger than what is unread and the next
  // read need is given back: with bytes unread, they move to one that fits.
  const std::string unread(b.unread());
  ASSERT_GT(b.capacity(), 4 * unread.size());
  b.consume(unread.size() - 10);
  b.shrink();
  EXPECT_EQ(b.unread(), unread.substr(unread.size() - 10));
  EXPECT_EQ(b.capacity(), 10 + InputBuffer::kMinRead);
  b.shrink();  // (already fits: nothing moves)
  EXPECT_EQ(b.capacity(), 10 + InputBuffer::kMinRead);
  // Drained after a burst, the block goes altogether.
  InputBuffer c;
  for (int i = 0; i < 5; ++i) {  // offers of 16 to 256 KiB, each filled
    read_into(c, std::string(c.read_size(), 'x'));
    c.consume(c.size());
  }
  read_into(c, "z");  // the burst ends
  c.consume(c.size());
  EXPECT_GT(c.capacity(), 4 * c.read_size());
  c.shrink();
  EXPECT_EQ(c.capacity(), 0u);
  EXPECT_EQ(c.unread(), "");
  read_into(c, "after");
  EXPECT_EQ(c.unread(), "after");
  EXPECT_EQ(c.capacity(), InputBuffer::kMinRead);
}

TEST(InputBuffer, BytesConsumedWhileAReadIsUnderWayLeaveItsSpaceWhereItWas) {
  InputBuffer b;
  read_into(b, "*1\r\n$4\r\nPING\r\n");
  const auto space = b.space();  // the read starts
  b.consume(b.size());           // the command runs meanwhile
  std::memcpy(space.data(), "next", 4);
  b.commit(4);  // the read completes
  EXPECT_EQ(b.unread(), "next");
}

TEST(InputBuffer, ACommandLongerThanTheBufferGrowsIt) {
  InputBuffer b;
  std::string model;
  // Short reads of a command that is still coming: the space after the
  // unread bytes is always the offer, however many of them wait.
  for (int i = 0; i < 200; ++i) {
    const std::string part(1000 + i, static_cast<char>('a' + i % 26));
    read_into(b, part);
    model += part;
  }
  EXPECT_EQ(b.unread(), model);
  EXPECT_GE(b.capacity(), model.size());
}

}  // namespace
}  // namespace ebb::resp
