// Chunked questions and answers put back together (cluster/message_chunks):
// in order, interleaved with another sender's on the same reply subject,
// and refused when a chunk is missing or out of order. The messages are
// made as libnats makes what it receives: a payload and the chunk header.
#include "ebb/cluster/message_chunks.hpp"

#include <gtest/gtest.h>

#include "ebb/cluster/nats_client.hpp"

namespace ebb::cluster {
namespace {

MsgPtr chunk(std::string_view data, const char* header) {
  static const bool library = nats_Open(-1) == NATS_OK;  // (messages need the library started, as a connection starts it)
  EXPECT_TRUE(library);
  natsMsg* raw = nullptr;
  EXPECT_EQ(natsMsg_Create(&raw, "reply.1.3", nullptr, data.data(), static_cast<int>(data.size())), NATS_OK);
  MsgPtr m(raw);
  if (header) {
    EXPECT_EQ(natsMsgHeader_Set(m.get(), kChunkHeader, header), NATS_OK);
  }
  return m;
}

TEST(MessageChunks, APlainMessageIsWholeAtOnce) {
  ChunkAssembler a;
  EXPECT_EQ(a.add("reply.1.3", chunk("whole", nullptr).get()), "whole");
  EXPECT_EQ(a.pending(), 0u);
}

TEST(MessageChunks, ChunksInOrderArePutBackTogetherEvenInterleavedWithAnotherSenders) {
  ChunkAssembler a;
  EXPECT_EQ(a.add("reply.1.3", chunk("ab", "1f/0/3").get()), std::nullopt);
  EXPECT_EQ(a.add("reply.1.3", chunk("XY", "2e/0/2").get()), std::nullopt);  // another sender, same subject
  EXPECT_EQ(a.add("reply.1.3", chunk("cd", "1f/1/3").get()), std::nullopt);
  EXPECT_EQ(a.add("reply.1.3", chunk("Z", "2e/1/2").get()), "XYZ");
  EXPECT_EQ(a.add("reply.1.3", chunk("e", "1f/2/3").get()), "abcde");
  EXPECT_EQ(a.pending(), 0u);
  // The same group on another subject is another payload.
  EXPECT_EQ(a.add("reply.2.3", chunk("q", "1f/0/2").get()), std::nullopt);
  EXPECT_EQ(a.add("reply.1.3", chunk("r", "1f/0/2").get()), std::nullopt);
  EXPECT_EQ(a.add("reply.2.3", chunk("s", "1f/1/2").get()), "qs");
  EXPECT_EQ(a.pending(), 1u);
}

TEST(MessageChunks, AMissingOrMisplacedChunkLosesThePayloadNotTheNextOne) {
  ChunkAssembler a;
  EXPECT_EQ(a.add("r", chunk("b", "7/1/2").get()), std::nullopt);  // its start never came
  EXPECT_EQ(a.pending(), 0u);
  EXPECT_EQ(a.add("r", chunk("a", "7/0/3").get()), std::nullopt);
  EXPECT_EQ(a.add("r", chunk("c", "7/2/3").get()), std::nullopt);  // chunk 1 skipped: dropped
  EXPECT_EQ(a.pending(), 0u);
  EXPECT_EQ(a.add("r", chunk("a", "8/0/2").get()), std::nullopt);
  EXPECT_EQ(a.add("r", chunk("b", "8/1/3").get()), std::nullopt);  // another count: dropped
  EXPECT_EQ(a.pending(), 0u);
  for (const char* bad : {"", "x", "1/2", "1/3/3", "1/0/0", "zz/0/1", "1/-1/2", "1/0/2/3"}) {
    EXPECT_EQ(a.add("r", chunk("a", bad).get()), std::nullopt) << bad;
  }
  EXPECT_EQ(a.add("r", chunk("a", "9/0/2").get()), std::nullopt);
  EXPECT_EQ(a.add("r", chunk("b", "9/1/2").get()), "ab");
}

TEST(MessageChunks, WhatASenderClaimsCannotMakeTheAssemblerHoldMore) {
  ChunkAssembler a({.max_whole = 10, .max_held = 12, .max_partials = 2});
  // A first chunk claiming more than a whole may be is refused at once.
  EXPECT_EQ(a.add("r", chunk("abcd", "1/0/4").get()), std::nullopt);  // 3 more of 4 bytes: 16 > 10
  EXPECT_EQ(a.pending(), 0u);
  EXPECT_EQ(a.add("r", chunk("abcdef", "1/0/3").get()), std::nullopt);  // 2 more of 6 bytes: 12 > 10, refused too
  EXPECT_EQ(a.pending(), 0u);
  // A claim that fits, whose chunks then grow past it, is dropped whole.
  EXPECT_EQ(a.add("r", chunk("abc", "2/0/3").get()), std::nullopt);
  EXPECT_EQ(a.add("r", chunk("defghij", "2/1/3").get()), std::nullopt);  // 10 bytes held: past max_whole with the next
  EXPECT_EQ(a.held_bytes(), 10u);
  EXPECT_EQ(a.add("r", chunk("k", "2/2/3").get()), std::nullopt);
  EXPECT_EQ(a.pending(), 0u);
  EXPECT_EQ(a.held_bytes(), 0u);
  // Payloads still missing chunks: at most max_partials, and max_held bytes together.
  EXPECT_EQ(a.add("r", chunk("aaaa", "3/0/2").get()), std::nullopt);
  EXPECT_EQ(a.add("s", chunk("bbbb", "3/0/2").get()), std::nullopt);
  EXPECT_EQ(a.add("t", chunk("c", "3/0/2").get()), std::nullopt);  // a third: refused
  EXPECT_EQ(a.pending(), 2u);
  EXPECT_EQ(a.add("r", chunk("aaaaa", "3/1/2").get()), std::nullopt);  // 8 + 5 > 12 held: r is dropped
  EXPECT_EQ(a.pending(), 1u);
  EXPECT_EQ(a.held_bytes(), 4u);
  EXPECT_EQ(a.add("s", chunk("bbbb", "3/1/2").get()), "bbbbbbbb");  // the other still completes
  EXPECT_EQ(a.held_bytes(), 0u);
  // Plain messages are never held, whatever their size.
  EXPECT_EQ(a.add("r", chunk("a plain message of more than ten bytes", nullptr).get()), "a plain message of more than ten bytes");
}

TEST(MessageChunks, TheAssemblersOfANodeShareOneBudgetAndEmptyChunksAreRefused) {
  auto budget = std::make_shared<ChunkBudget>();
  const ChunkAssembler::Limits limits{.max_whole = 10, .max_held = 8, .max_partials = 2};
  ChunkAssembler a(limits, budget), b(limits, budget);
  EXPECT_EQ(a.add("r", chunk("", "1/0/5").get()), std::nullopt);  // an empty chunk that is not the last: refused
  EXPECT_EQ(budget->partials.load(), 0u);
  EXPECT_EQ(a.add("r", chunk("abcd", "2/0/2").get()), std::nullopt);
  EXPECT_EQ(b.add("s", chunk("xyzab", "3/0/2").get()), std::nullopt);  // 4 + 5 > 8 held on the node: dropped
  EXPECT_EQ(b.pending(), 0u);
  EXPECT_EQ(b.add("t", chunk("xy", "4/0/2").get()), std::nullopt);
  EXPECT_EQ(a.add("u", chunk("q", "5/0/2").get()), std::nullopt);  // two payloads held on the node: a third is refused
  EXPECT_EQ(a.pending(), 1u);
  EXPECT_EQ(a.add("r", chunk("ef", "2/1/2").get()), "abcdef");
  EXPECT_EQ(budget->bytes.load(), 2u);  // t's
  EXPECT_EQ(budget->partials.load(), 1u);
  {
    ChunkAssembler c(limits, budget);
    EXPECT_EQ(c.add("w", chunk("k", "7/0/3").get()), std::nullopt);
    EXPECT_EQ(budget->partials.load(), 2u);
  }  // an assembler that goes gives back what it held
  EXPECT_EQ(budget->partials.load(), 1u);
  EXPECT_EQ(budget->bytes.load(), 2u);
}

}  // namespace
}  // namespace ebb::cluster
