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
  if (header) EXPECT_EQ(natsMsgHeader_Set(m.get(), kChunkHeader, header), NATS_OK);
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

}  // namespace
}  // namespace ebb::cluster
