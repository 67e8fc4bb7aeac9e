// The checkpoint manifest's bytes: a checked-in version 3 manifest reads back
// field for field and this build writes it byte for byte; a version 2
// manifest (a checked-in data directory's) still reads, each namespace's
// configuration LSN taken as its state LSN.
#include <gtest/gtest.h>

#include <cstdlib>

#include "ebb/storage/checkpoint_store.hpp"
#include "ebb/storage/file_io.hpp"

namespace ebb::storage {
namespace {

const std::filesystem::path kGolden = std::filesystem::path(EBB_TEST_DATA) / "golden";

Manifest sample() {
  Manifest m;
  m.start_lsn = 12;
  m.written_at = 1700000000.5;
  m.namespaces.push_back({"tags", R"({"name":"tags","k":7})", 11, "tags.00000000000000000011.state", 5});
  m.namespaces.push_back({"orders", R"({"name":"orders"})", 2, "orders.00000000000000000002.state", 2});
  m.keys.push_back({"key-1", 0xabcdef, 9, 1700000000.25});
  m.parts.push_back({"distributions.03", 10, "distributions.03.00000000000000000010.state"});
  return m;
}

TEST(CheckpointManifest, Version3ReadsAndWritesItsGoldenBytes) {
  // EBB_UPDATE_GOLDEN=1 writes the file anew: only with a new version, and
  // the old file kept as that version's (older data directories still load).
  if (std::getenv("EBB_UPDATE_GOLDEN")) write_file_atomically(kGolden / "manifest-v3.bin", sample().serialize());
  const std::string golden = read_whole_file(kGolden / "manifest-v3.bin");
  EXPECT_EQ(sample().serialize(), golden) << "the manifest's bytes changed: existing data directories would not load";
  const Manifest m = Manifest::parse(golden);
  const Manifest want = sample();
  EXPECT_EQ(m.start_lsn, want.start_lsn);
  EXPECT_EQ(m.written_at, want.written_at);
  ASSERT_EQ(m.namespaces.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(m.namespaces[i].name, want.namespaces[i].name);
    EXPECT_EQ(m.namespaces[i].config_json, want.namespaces[i].config_json);
    EXPECT_EQ(m.namespaces[i].state_lsn, want.namespaces[i].state_lsn);
    EXPECT_EQ(m.namespaces[i].state_file, want.namespaces[i].state_file);
    EXPECT_EQ(m.namespaces[i].config_lsn, want.namespaces[i].config_lsn);
  }
  ASSERT_EQ(m.keys.size(), 1u);
  EXPECT_EQ(m.keys[0].key, "key-1");
  EXPECT_EQ(m.keys[0].body_hash, 0xabcdefu);
  EXPECT_EQ(m.keys[0].lsn, 9u);
  EXPECT_EQ(m.keys[0].received_at, 1700000000.25);
  ASSERT_EQ(m.parts.size(), 1u);
  EXPECT_EQ(m.parts[0].name, "distributions.03");
  EXPECT_EQ(m.parts[0].state_lsn, 10u);
}

TEST(CheckpointManifest, AVersion2ManifestReadsConfigurationLsnsAsStateLsns) {
  const Manifest m = Manifest::parse(read_whole_file(kGolden / "datadir-v8" / "checkpoints" / "00000000000000000004.manifest"));
  ASSERT_FALSE(m.namespaces.empty());
  for (const auto& n : m.namespaces) EXPECT_EQ(n.config_lsn, n.state_lsn) << n.name;
}

}  // namespace
}  // namespace ebb::storage
