// ebb serve --nats: three real nodes on a real nats-server -js (loopback,
// random ports), fed and asked over HTTP, against a single node fed the
// same events. Skipped, saying why, when nats-server is not installed.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <tuple>
#include <regex>
#include <set>
#include <thread>

#include "ebb/cluster/nats_client.hpp"
#include "ebb/cluster/shared_checkpoints.hpp"
#include "ebb/core/clock.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/service/cluster_link.hpp"
#include "ebb/service/log_records.hpp"
#include "ebb/service/namespace_spec.hpp"
#include "support/ebb_server.hpp"
#include "support/nats_server.hpp"
#include "support/raw_connection.hpp"
#include "support/redis_cli.hpp"
#include "support/sse_reader.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;
using testing::HttpResult;
using testing::NatsServer;

struct Item {
  std::string id;
  double estimate = 0, lower = 0, upper = 0;
  friend bool operator==(const Item&, const Item&) = default;
};

struct TopK {
  std::vector<Item> items;
  double total = 0;
  bool partial = true;
  bool cluster = false;
};

TopK parse_top(const std::string& body) {
  simdjson::dom::parser p;
  simdjson::dom::element e;
  TopK out;
  if (p.parse(body).get(e)) {
    ADD_FAILURE() << "not JSON: " << body;
    return out;
  }
  for (auto item : e["items"].get_array()) {
    Item i;
    i.id = std::string(std::string_view(item["item_id"]));
    i.estimate = double(item["estimated_count"]);
    i.lower = double(item["lower_bound"]);
    i.upper = double(item["upper_bound"]);
    out.items.push_back(i);
  }
  out.total = double(e["total"]);
  simdjson::dom::element cluster;
  if (!e["cluster"].get(cluster)) {
    out.cluster = true;
    out.partial = bool(cluster["partial"]);
  } else {
    out.partial = false;
  }
  return out;
}

class Cluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NatsServer::available()) GTEST_SKIP() << "nats-server is not installed (scripts/bootstrap installs it): cluster tests skipped";
    dir_ = testing::make_temp_dir("ebb-cluster");
    nats_ = std::make_unique<NatsServer>(dir_ / "nats");
  }
  void TearDown() override {
    nodes_.clear();
    nats_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // A node with a fixed id (a restart with the same id is the same node).
  std::unique_ptr<EbbServer> node(const std::string& id, const std::vector<std::string>& more = {}) {
    // Checkpoints every second: a killed node resumes from one, then replays.
    std::vector<std::string> args{"--nats", nats_->url(), "--node-id", id, "--nats-partitions", "8", "--checkpoint-interval", "1s",
                                  "--audit-interval", "200ms"};
    args.insert(args.end(), more.begin(), more.end());
    return std::make_unique<EbbServer>(dir_ / id, args);
  }
  void start(std::initializer_list<const char*> ids) {
    for (const char* id : ids) nodes_[id] = node(id);
  }
  static HttpResult call(const EbbServer& s, const std::string& method, const std::string& target, const std::string& body = "") {
    HttpClient c(s.port());
    return c.request(method, target, body, "application/json");
  }
  // Polls until the node's top K covers every partition (ownership settles
  // within a few heartbeats), and returns it.
  TopK settled_top(const EbbServer& s, const std::string& query) {
    TopK t;
    for (int i = 0; i < 300; ++i) {
      HttpResult r;
      try {
        r = call(s, "GET", query);
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what() << "; the node's log: " << s.log();
        return t;
      }
      if (r.status == 200) {
        t = parse_top(r.body);
        if (!t.partial) return t;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "the cluster never answered whole: " << call(s, "GET", "/readyz").body;
    return t;
  }
  // The node's whole list of `tags` (k = 400: every item the tests write)
  // holds each item of `expected` at exactly its count, and their total.
  void expect_exact(const EbbServer& s, const std::map<std::string, double>& expected, const std::string& label = "") {
    double total = 0;
    for (const auto& [_, w] : expected) total += w;
    const TopK got = settled_top(s, "/top-k?namespace=tags&k=400");
    EXPECT_EQ(got.total, total) << label;
    ASSERT_EQ(got.items.size(), expected.size()) << label;
    for (const auto& item : got.items) {
      const auto it = expected.find(item.id);
      if (it == expected.end()) ADD_FAILURE() << label << ": " << item.id << " was never written";
      else EXPECT_EQ(item.estimate, it->second) << label << " " << item.id;
    }
  }

  std::filesystem::path dir_;
  std::unique_ptr<NatsServer> nats_;
  std::map<std::string, std::unique_ptr<EbbServer>> nodes_;
};

// A batch of events as POST /events takes them, and what it adds to each item.
std::string batch(std::mt19937_64& rng, int events, std::map<std::string, double>& expected) {
  std::string body = R"({"namespace":"tags","events":[)";
  for (int i = 0; i < events; ++i) {
    // Zipf-ish: low ids much more often.
    const int id = static_cast<int>(std::pow(std::uniform_real_distribution<double>(0, 1)(rng), 3) * 300);
    const int weight = 1 + static_cast<int>(rng() % 5);
    std::string item = "item-";
    item += std::to_string(id);
    expected[item] += weight;
    if (i) body += ',';
    body += R"({"item_id":")";
    body += item;
    body += R"(","weight":)";
    body += std::to_string(weight);
    body += '}';
  }
  return body + "]}";
}

// What a node's log says per partition: the first group of each match of
// `pattern` (a partition) to its second (a sequence).
std::map<std::string, std::string> per_partition(const std::string& log, const char* pattern) {
  const std::regex re(pattern);
  std::map<std::string, std::string> out;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it) out[(*it)[1]] = (*it)[2];
  return out;
}

constexpr const char* kNamespace = R"({"name":"tags","windows":["all"],"k":20})";

TEST_F(Cluster, ThreeNodesAnswerAsOneNodeFedTheSameEvents) {
  start({"a", "b", "c"});
  auto dir = testing::make_temp_dir("ebb-single");
  EbbServer single(dir, {"--fsync", "off"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  ASSERT_EQ(call(single, "POST", "/namespaces", kNamespace).status, 201);
  // Another node knows it at once (its catalog catches up) and refuses a second create.
  EXPECT_EQ(call(*nodes_["b"], "POST", "/namespaces", kNamespace).status, 409);

  std::mt19937_64 rng(42);
  std::map<std::string, double> expected;
  const char* ids[] = {"a", "b", "c"};
  for (int b = 0; b < 60; ++b) {
    const std::string body = batch(rng, 100, expected);
    ASSERT_EQ(call(*nodes_[ids[b % 3]], "POST", "/events", body).status, 204) << body;
    ASSERT_EQ(call(single, "POST", "/events", body).status, 204);
  }
  // An invalid batch is refused whole by any node, naming the field, and counts nothing.
  const auto bad = call(*nodes_["c"], "POST", "/events", R"({"namespace":"tags","events":[{"item_id":"item-1"},{"item_id":"item-2","weight":-1}]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("events[1].weight"), std::string::npos) << bad.body;

  const TopK want = parse_top(call(single, "GET", "/top-k?namespace=tags&k=20").body);
  ASSERT_EQ(want.items.size(), 20u);
  double total = 0;
  for (const auto& [_, w] : expected) total += w;
  EXPECT_EQ(want.total, total);
  for (const char* id : ids) {
    const TopK got = settled_top(*nodes_[id], "/top-k?namespace=tags&k=20");
    EXPECT_TRUE(got.cluster);
    EXPECT_EQ(got.total, want.total) << id;
    ASSERT_EQ(got.items.size(), want.items.size()) << id;
    for (std::size_t i = 0; i < want.items.size(); ++i) {
      EXPECT_EQ(got.items[i].id, want.items[i].id) << id << " rank " << i + 1;
      EXPECT_EQ(got.items[i].estimate, want.items[i].estimate) << id << " " << want.items[i].id;
      EXPECT_EQ(got.items[i].estimate, expected[want.items[i].id]) << id << " " << want.items[i].id;
    }
  }
  // Point counts: each from its item's partition, exact here.
  for (const char* item : {"item-0", "item-7", "item-150"}) {
    simdjson::dom::parser p;
    const auto r = call(*nodes_["b"], "GET", std::string("/count?namespace=tags&item_id=") + item);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(double(p.parse(r.body)["estimated_count"]), expected[item]) << item;
  }
  const auto counts = call(*nodes_["c"], "POST", "/counts", R"({"namespace":"tags","item_ids":["item-3","item-0","no-such-item"]})");
  ASSERT_EQ(counts.status, 200) << counts.body;
  simdjson::dom::parser p;
  auto items = p.parse(counts.body)["items"].get_array();
  std::vector<double> got;
  for (auto i : items) got.push_back(double(i["estimated_count"]));
  EXPECT_EQ(got, (std::vector<double>{expected["item-3"], expected["item-0"], 0}));
  // A personalised list: the global top and the user's items from their
  // partitions, blended as a single node blends them.
  const std::string personal =
      R"({"namespace":"tags","k":10,"alpha":0.3,"user_items":[{"item_id":"item-150","weight":3},{"item_id":"item-7"},{"item_id":"never-seen"}]})";
  auto blended = [](const std::string& body) {
    simdjson::dom::parser bp;
    std::vector<std::tuple<std::string, double, double, std::int64_t>> out;  // id, score, estimate, global rank (-1: none)
    for (auto i : bp.parse(body)["items"].get_array()) {
      out.emplace_back(std::string(std::string_view(i["item_id"])), double(i["score"]), double(i["estimated_count"]),
                       i["global_rank"].is_null() ? -1 : std::int64_t(i["global_rank"]));
    }
    return out;
  };
  const auto single_blend = call(single, "POST", "/top-k/personalised", personal);
  ASSERT_EQ(single_blend.status, 200) << single_blend.body;
  const auto cluster_blend = call(*nodes_["a"], "POST", "/top-k/personalised", personal);
  ASSERT_EQ(cluster_blend.status, 200) << cluster_blend.body;
  EXPECT_EQ(blended(cluster_blend.body), blended(single_blend.body)) << cluster_blend.body;
  EXPECT_NE(cluster_blend.body.find(R"("cluster":{"partitions":8,"partial":false)"), std::string::npos) << cluster_blend.body;
  EXPECT_EQ(blended(single_blend.body).size(), 10u);
  // Anomalies: a burst in the last minute of an hour of steady items, read
  // from every partition's two windows, as a single node reads them.
  const std::string news = R"({"name":"news","clock":"event","windows":["1m","1h"]})";
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", news).status, 201);
  ASSERT_EQ(call(single, "POST", "/namespaces", news).status, 201);
  std::string hour = R"({"namespace":"news","events":[)";
  auto event = [&hour](const std::string& id, double t) {
    if (hour.back() == '}') hour += ',';
    hour += R"({"item_id":")" + id + R"(","timestamp":)" + std::to_string(1.7e9 + t) + "}";
  };
  for (int t = 0; t < 3600; t += 10) {
    for (int i = 0; i < 8; ++i) event("steady-" + std::to_string(i), t + i);
  }
  for (int i = 0; i < 30; ++i) event("burst-a", 3541 + 2 * i);
  for (int i = 0; i < 20; ++i) event("burst-b", 3542 + 2 * i);
  event("steady-0", 3599);
  hour += "]}";
  ASSERT_EQ(call(*nodes_["b"], "POST", "/events", hour).status, 204);
  ASSERT_EQ(call(single, "POST", "/events", hour).status, 204);
  auto jumps = [](const std::string& body) {
    simdjson::dom::parser jp;
    std::vector<std::tuple<std::string, double, std::uint64_t, std::int64_t, double>> out;  // id, score, rank, rank jump, count
    for (auto i : jp.parse(body)["items"].get_array()) {
      out.emplace_back(std::string(std::string_view(i["item_id"])), double(i["score"]), std::uint64_t(i["rank"]), std::int64_t(i["rank_jump"]),
                       double(i["count"]["lower_bound"]));
    }
    return out;
  };
  const std::string ask = "/anomalies?namespace=news&window=1m&baseline=1h&min_rank_jump=5";
  const auto single_jumps = call(single, "GET", ask);
  ASSERT_EQ(single_jumps.status, 200) << single_jumps.body;
  ASSERT_EQ(jumps(single_jumps.body).size(), 2u) << single_jumps.body;
  for (const char* id : ids) {
    const auto cluster_jumps = call(*nodes_[id], "GET", ask);
    ASSERT_EQ(cluster_jumps.status, 200) << cluster_jumps.body;
    EXPECT_EQ(jumps(cluster_jumps.body), jumps(single_jumps.body)) << id << ": " << cluster_jumps.body;
    EXPECT_NE(cluster_jumps.body.find(R"("cluster":{"partitions":8,"partial":false)"), std::string::npos) << cluster_jumps.body;
  }
  // No history in 1970: an empty series, as on a single node.
  EXPECT_EQ(call(*nodes_["a"], "GET", "/history?namespace=tags&item_id=item-0&from=1&to=2").body,
            R"({"namespace":"tags","item_id":"item-0","window":"all","points":[],"truncated":false})");
  // The namespace's memory over its 8 partitions (the sketches measured
  // where they are allocated): about one single node's, not one each, as
  // each partition counts with an eighth of its sketch.
  simdjson::dom::parser mp, sp;
  const double cluster_bytes = double(mp.parse(call(*nodes_["b"], "GET", "/namespaces/tags").body)["stats"]["memory_bytes"]);
  const double single_bytes = double(sp.parse(call(single, "GET", "/namespaces/tags").body)["stats"]["memory_bytes"]);
  EXPECT_LT(cluster_bytes, 1.6 * single_bytes);
  EXPECT_GT(cluster_bytes, 0.8 * single_bytes);
  // The accuracy audit: each partition samples and audits its own items;
  // every node shows their figures together (exact here: the sketches are wide).
  std::string audited;
  for (int i = 0; i < 100; ++i) {
    audited = call(*nodes_["c"], "GET", "/namespaces/tags").body;
    simdjson::dom::parser ap;
    const auto view = ap.parse(audited)["stats"]["views"].at(0)["audit"];
    if (!view["as_of"].is_null() && view["top"]["compared"].get_uint64().value() > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  simdjson::dom::parser ap;
  const auto audit = ap.parse(audited)["stats"];
  EXPECT_GT(audit["audit"]["sampled_items"].get_uint64().value(), 64u) << "eight partitions sample up to 64 each: " << audited;
  const auto view = audit["views"].at(0)["audit"];
  EXPECT_GE(view["compared"].get_uint64().value(), audit["audit"]["sampled_items"].get_uint64().value()) << audited;
  EXPECT_GT(view["top"]["compared"].get_uint64().value(), 0u) << audited;
  EXPECT_EQ(view["max_error"].get_double().value(), 0) << audited;
  EXPECT_TRUE(view["sla_met"].get_bool().value()) << audited;
  EXPECT_EQ(single.stop(), 0);
  std::filesystem::remove_all(dir);
}

TEST_F(Cluster, AKilledNodeLosesNothingAcknowledgedAndCountsNothingTwice) {
  start({"a", "b", "c"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  std::mt19937_64 rng(7);
  std::map<std::string, double> expected;
  // Batches through b and c while a is killed and restarted: each 204 must
  // be counted once, whichever node owned its partitions at the time.
  for (int b = 0; b < 90; ++b) {
    if (b == 30) nodes_["a"]->stop_hard();
    if (b == 60) nodes_["a"] = node("a");
    const std::string body = batch(rng, 50, expected);
    ASSERT_EQ(call(*nodes_[b % 2 ? "b" : "c"], "POST", "/events", body).status, 204);
  }
  for (const char* id : {"a", "b", "c"}) expect_exact(*nodes_[id], expected, id);
  // A node that dies for good: once its heartbeat lapses (5 s), the others
  // take its partitions, replay them, and answer whole again.
  nodes_["a"]->stop_hard();
  expect_exact(*nodes_["b"], expected, "b, a gone");
  // A clean stop leaves the cluster at once and exits 0.
  EXPECT_EQ(nodes_["c"]->stop(), 0) << nodes_["c"]->log();
}

// SIGKILL of the node the writes go through, with writes in flight: each
// batch it acknowledged counts once; each it left unanswered (the outcome
// unknown: published or not) is retried through another node with its
// Idempotency-Key and counts once too.
TEST_F(Cluster, ANodeKilledWithWritesInFlightThroughItLosesNothingAcknowledged) {
  start({"a", "b"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  (void)settled_top(*nodes_["b"], "/top-k?namespace=tags");
  std::mutex mu;
  std::map<std::string, double> expected;
  std::atomic<int> through_a{0}, retried{0}, failed{0};
  std::atomic<bool> killed{false};
  auto post = [](const EbbServer& n, const std::string& body, const std::string& key) {
    HttpClient c(n.port());
    return c.request("POST", "/events", body, "application/json", {{"Idempotency-Key", key}}).status;
  };
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      for (int i = 0; i < 40; ++i) {
        std::map<std::string, double> mine;
        const std::string body = batch(rng, 50, mine);
        const std::string key = "w" + std::to_string(t) + "-" + std::to_string(i);
        int status = 0;
        if (!killed) {
          try {
            status = post(*nodes_["a"], body, key);
          } catch (const std::exception&) {
            status = 0;  // (cut off by the kill)
          }
          if (status == 204) ++through_a;
        }
        for (int attempt = 0; status != 204 && attempt < 50; ++attempt) {
          if (attempt) std::this_thread::sleep_for(std::chrono::milliseconds(200));
          try {
            status = post(*nodes_["b"], body, key);
          } catch (const std::exception&) {
            status = 0;
          }
          if (status == 204) ++retried;
        }
        if (status != 204) {
          ++failed;
          continue;
        }
        std::lock_guard lock(mu);
        for (const auto& [item, w] : mine) expected[item] += w;
      }
    });
  }
  while (through_a < 20) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  nodes_["a"]->stop_hard();
  killed = true;
  for (auto& w : writers) w.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_GT(retried.load(), 0);
  expect_exact(*nodes_["b"], expected, "b");
  nodes_["a"] = node("a");
  expect_exact(*nodes_["a"], expected, "a, restarted");
}

TEST_F(Cluster, ANodeAddedLaterTakesPartitionsOver) {
  start({"a", "b"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  std::mt19937_64 rng(9);
  std::map<std::string, double> expected;
  for (int b = 0; b < 20; ++b) ASSERT_EQ(call(*nodes_[b % 2 ? "a" : "b"], "POST", "/events", batch(rng, 50, expected)).status, 204);
  start({"c"});
  // c serves some partitions (rendezvous hashing gives it about a third)...
  const std::regex serving(R"(c\[\d)");
  bool took = false;
  for (int i = 0; i < 300 && !took; ++i) {
    took = std::regex_search(call(*nodes_["a"], "GET", "/readyz").body, serving);
    if (!took) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(took) << call(*nodes_["a"], "GET", "/readyz").body;
  // ...having replayed what came before it joined, and what came after.
  for (int b = 0; b < 10; ++b) ASSERT_EQ(call(*nodes_["c"], "POST", "/events", batch(rng, 50, expected)).status, 204);
  double total = 0;
  for (const auto& [_, w] : expected) total += w;
  for (const char* id : {"a", "b", "c"}) {
    const TopK got = settled_top(*nodes_[id], "/top-k?namespace=tags&k=300");
    EXPECT_EQ(got.total, total) << id;
    for (const auto& item : got.items) EXPECT_EQ(item.estimate, expected[item.id]) << id << " " << item.id;
  }
}

// Questions, answers and batches larger than one NATS message (the
// server's max_payload; 16 KiB here, 1 MiB by default) go in pieces: a
// long top-K list, a POST /counts of many ids, a batch whose part of one
// partition is larger than a message (counted whole), a RESP pipeline of
// long items; all answer as a single node does. A commit or change that
// cannot fit is refused, with nothing written.
TEST_F(Cluster, QuestionsAnswersAndBatchesLargerThanAMessageGoInPieces) {
  nats_.reset();
  nats_ = std::make_unique<NatsServer>(dir_ / "nats-small", 16 * 1024);
  nodes_["a"] = node("a", {"--resp-port", "0"});
  nodes_["b"] = node("b");
  auto dir = testing::make_temp_dir("ebb-single");
  EbbServer single(dir, {"--fsync", "off", "--resp-port", "0"});
  const char* spec = R"({"name":"long","windows":["all"],"k":300})";
  for (const EbbServer* s : {nodes_["a"].get(), &single}) ASSERT_EQ(call(*s, "POST", "/namespaces", spec).status, 201);
  settled_top(*nodes_["b"], "/top-k?namespace=long");
  // 60-byte ids: a batch of 400 events is about 35 KiB, and one item's 300
  // copies all go to one partition.
  auto id = [](int i) {
    std::string s = "item-" + std::to_string(i) + "-";
    s.resize(60, 'x');
    return s;
  };
  for (int b = 0; b < 3; ++b) {
    std::string body = R"({"namespace":"long","events":[)";
    for (int i = 0; i < 400; ++i) {
      if (i) body += ',';
      body.append(R"({"item_id":")").append(id(b == 2 ? 7 : (i * 7 + b) % 500)).append(R"(","weight":)").append(std::to_string(1 + i % 3)).append("}");
    }
    body += "]}";
    const auto r = call(*nodes_[b % 2 ? "b" : "a"], "POST", "/events", body);
    ASSERT_EQ(r.status, 204) << r.body;
    ASSERT_EQ(call(single, "POST", "/events", body).status, 204);
  }
  // The list (about 300 ids of 60 bytes from each partition: answers of
  // about 40 KiB).
  const TopK want = parse_top(call(single, "GET", "/top-k?namespace=long&k=300").body);
  ASSERT_EQ(want.items.size(), 300u);
  for (const char* n : {"a", "b"}) {
    const TopK got = settled_top(*nodes_[n], "/top-k?namespace=long&k=300");
    EXPECT_EQ(got.total, want.total) << n;
    ASSERT_EQ(got.items.size(), want.items.size()) << n;
    for (std::size_t i = 0; i < got.items.size(); ++i) {
      EXPECT_EQ(got.items[i].id, want.items[i].id) << n << " rank " << i + 1;
      EXPECT_EQ(got.items[i].estimate, want.items[i].estimate) << n << " " << got.items[i].id;
    }
  }
  // Counts of 500 ids, one of them 300 times over (a question of about
  // 20 KiB to its partition).
  std::string ids = R"({"namespace":"long","item_ids":[)";
  for (int i = 0; i < 800; ++i) ids.append(i ? "," : "").append("\"").append(id(i < 300 ? 7 : i - 300)).append("\"");
  ids += "]}";
  const auto counted = call(*nodes_["b"], "POST", "/counts", ids);
  ASSERT_EQ(counted.status, 200) << counted.body;
  simdjson::dom::parser p, q;
  const auto mine = p.parse(counted.body), theirs = q.parse(call(single, "POST", "/counts", ids).body);
  const auto mine_items = mine["items"].get_array().value(), their_items = theirs["items"].get_array().value();
  ASSERT_EQ(mine_items.size(), their_items.size());
  for (std::size_t i = 0; i < mine_items.size(); ++i) {
    EXPECT_EQ(double(mine_items.at(i)["estimated_count"]), double(their_items.at(i)["estimated_count"])) << i;
  }
  // A RESP pipeline of adds of one long item: one batch, its one part in pieces.
  std::string pipeline;
  for (int i = 0; i < 200; ++i) pipeline += testing::resp_command({"TOPK.ADD", "long", id(1234), id(1234)});
  testing::RawConnection to_node(nodes_["a"]->resp_port()), to_single(single.resp_port());
  ASSERT_TRUE(to_node.send(pipeline));
  ASSERT_TRUE(to_single.send(pipeline));
  const std::string replies = to_single.read_bytes(std::string::npos, 3000);
  ASSERT_FALSE(replies.empty());
  EXPECT_EQ(to_node.read_bytes(replies.size(), 20000), replies);
  EXPECT_EQ(settled_top(*nodes_["b"], "/top-k?namespace=long&k=300").total, parse_top(call(single, "GET", "/top-k?namespace=long&k=300").body).total);
  // A change that cannot fit in one message: refused, nothing written.
  std::string exclude = R"({"exclude":[)";
  for (int i = 0; i < 400; ++i) exclude.append(i ? "," : "").append("\"").append(id(5000 + i)).append("\"");
  exclude += "]}";
  const auto refused = call(*nodes_["a"], "PATCH", "/namespaces/long", exclude);
  EXPECT_EQ(refused.status, 413) << refused.body;
  EXPECT_NE(refused.body.find("more than the cluster's NATS servers carry in one message"), std::string::npos) << refused.body;
  EXPECT_EQ(single.stop(), 0);
  std::filesystem::remove_all(dir);
}

// A rolling upgrade: while a node of an older build is live (its heartbeat
// names no protocol level), what it could not read is not written: a batch
// of an event-clock namespace and a merge are refused (503, nothing
// written), a batch of a wall-clock namespace goes as before; once it is
// gone, all goes again.
TEST_F(Cluster, WhileAnOlderNodeIsLiveWhatItCannotReadIsNotWritten) {
  start({"a"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", R"({"name":"ev","clock":"event","windows":["all"]})").status, 201);
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  const std::string ev_batch = R"({"namespace":"ev","events":[{"item_id":"x","timestamp":1700000000}]})";
  ASSERT_EQ(call(*nodes_["a"], "POST", "/events", ev_batch).status, 204);
  cluster::NatsClient client({nats_->url()}, "test");
  const cluster::KvPtr nodes = client.bucket("EBB_nodes", 1, std::chrono::milliseconds(5000));
  std::uint64_t rev = 0;
  ASSERT_EQ(kvStore_PutString(&rev, nodes.get(), "old", ""), NATS_OK);  // what a build before this one tells: no level
  HttpResult refused;
  int accepted = 1;
  for (int i = 0; i < 50; ++i) {  // (the node reads the heartbeats every second)
    refused = call(*nodes_["a"], "POST", "/events", ev_batch);
    if (refused.status != 204) break;
    ++accepted;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.body.find("node(s) old (an older ebb) cannot count"), std::string::npos) << refused.body;
  EXPECT_EQ(call(*nodes_["a"], "POST", "/events", R"({"namespace":"tags","events":[{"item_id":"w"}]})").status, 204);
  // The old node's partitions are unowned meanwhile, so the count is not
  // asked here; the refused batch is checked below, once it has left.
  ASSERT_EQ(kvStore_Delete(nodes.get(), "old"), NATS_OK);
  HttpResult again;
  for (int i = 0; i < 50; ++i) {
    again = call(*nodes_["a"], "POST", "/events", ev_batch);
    if (again.status == 204) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(again.status, 204) << again.body;
  const TopK ev = settled_top(*nodes_["a"], "/top-k?namespace=ev");
  EXPECT_EQ(ev.total, accepted + 1);  // what was accepted before and after: nothing of the refused ones
  EXPECT_EQ(settled_top(*nodes_["a"], "/top-k?namespace=tags").total, 1);
}

// --max-memory holds in cluster mode as on a single node: each node must be
// able to hold every partition of every namespace (P partitions, each
// with a share of the sketches and all of the candidates, and its accuracy
// audit: 3.2 MiB for these with 8 partitions), so a create or a patch past
// it is 507, nothing written.
TEST_F(Cluster, MaxMemoryRefusesANamespaceTheNodesCouldNotHold) {
  for (const char* id : {"a", "b"}) nodes_[id] = node(id, {"--max-memory", "7MiB"});
  for (const char* name : {"one", "two"}) {
    const std::string spec = std::string(R"({"name":")") + name + R"(","windows":["all"],"k":20})";
    ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", spec).status, 201) << name;
  }
  const auto refused = call(*nodes_["b"], "POST", "/namespaces", R"({"name":"three","windows":["all"],"k":20})");
  EXPECT_EQ(refused.status, 507) << refused.body;
  EXPECT_NE(refused.body.find("needs 3 MiB more; 6 MiB of the 7 MiB budget (--max-memory) are taken"), std::string::npos) << refused.body;
  EXPECT_EQ(call(*nodes_["a"], "GET", "/namespaces/three").status, 404);
  const auto grown = call(*nodes_["a"], "PATCH", "/namespaces/one", R"({"hot_key_threshold":100})");  // a detector: one more sketch
  EXPECT_EQ(grown.status, 507) << grown.body;
  // Room made by a delete is room again.
  ASSERT_EQ(call(*nodes_["b"], "DELETE", "/namespaces/two").status, 204);
  EXPECT_EQ(call(*nodes_["b"], "POST", "/namespaces", R"({"name":"three","windows":["all"],"k":20})").status, 201);
}

// An Idempotency-Key retry answers as the first attempt did, on any node,
// whatever changed since (a patch of the namespace): counted once; the key
// with another body is 422, as on a single node.
TEST_F(Cluster, AnIdempotencyKeyRetryCountsOnceOnAnyNodeWhateverChangedSince) {
  start({"a", "b"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  settled_top(*nodes_["b"], "/top-k?namespace=tags");
  auto post = [&](const char* n, const std::string& key, const std::string& body) {
    HttpClient c(nodes_[n]->port());
    return c.request("POST", "/events", body, "application/json", {{"Idempotency-Key", key}}).status;
  };
  const std::string body = R"({"namespace":"tags","events":[{"item_id":"b","weight":5},{"item_id":"c"}]})";
  ASSERT_EQ(post("a", "k1", body), 204);
  EXPECT_EQ(post("b", "k1", body), 204);  // the retry on another node: counted once
  ASSERT_EQ(call(*nodes_["b"], "PATCH", "/namespaces/tags", R"({"k":7})").status, 200);
  EXPECT_EQ(post("a", "k1", body), 204);  // after a patch (the batch's id would differ): still once
  EXPECT_EQ(post("b", "k1", R"({"namespace":"tags","events":[{"item_id":"b","weight":50}]})"), 422);
  ASSERT_EQ(post("b", "k2", body), 204);  // another key counts
  const TopK got = settled_top(*nodes_["a"], "/top-k?namespace=tags");
  EXPECT_EQ(got.total, 12);
  ASSERT_FALSE(got.items.empty());
  EXPECT_EQ(got.items.front().id, "b");
  EXPECT_EQ(got.items.front().estimate, 10);
}

// A node that leaves (SIGTERM) serves its partitions until the others have
// taken them over: a reader on another node never sees an answer leave
// them out.
TEST_F(Cluster, ANodeThatLeavesHandsItsPartitionsOverWithNoGap) {
  // Queries wait for a partition's owner a short while only, and the new
  // owner has a stream to replay first (without b's checkpoints): a gap
  // between b letting go and a having caught up would show.
  for (const char* id : {"a", "b"}) nodes_[id] = node(id, {"--nats-query-timeout", "300ms"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  std::mt19937_64 rng(21);
  std::map<std::string, double> expected;
  for (int b = 0; b < 200; ++b) ASSERT_EQ(call(*nodes_[b % 2 ? "a" : "b"], "POST", "/events", batch(rng, 500, expected)).status, 204);
  double total = 0;
  for (const auto& [_, w] : expected) total += w;
  ASSERT_EQ(settled_top(*nodes_["a"], "/top-k?namespace=tags&k=300").total, total);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, short_reads{0};
  std::string first_short;
  std::thread reader([&] {
    HttpClient c(nodes_["a"]->port());
    while (!done) {
      const auto r = c.request("GET", "/top-k?namespace=tags&k=300", "", "application/json");
      const TopK t = parse_top(r.body);
      ++reads;
      if (r.status != 200 || t.partial || t.total != total) {
        if (short_reads++ == 0) first_short = r.body;
      }
    }
  });
  EXPECT_EQ(nodes_["b"]->stop(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  done = true;
  reader.join();
  EXPECT_GT(reads.load(), 10);
  EXPECT_EQ(short_reads.load(), 0) << first_short;
}

// A node keeps its partitions' checkpoints in its data directory: stopped
// and started again, it resumes each partition from the sequence its
// checkpoint includes instead of replaying the stream; against a new
// stream (the old one deleted) it drops them.
TEST_F(Cluster, ARestartedNodeResumesItsPartitionsFromItsCheckpoints) {
  start({"a"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  std::mt19937_64 rng(11);
  std::map<std::string, double> expected;
  for (int b = 0; b < 20; ++b) ASSERT_EQ(call(*nodes_["a"], "POST", "/events", batch(rng, 50, expected)).status, 204);
  settled_top(*nodes_["a"], "/top-k?namespace=tags");  // every partition has applied the log
  EXPECT_EQ(nodes_["a"]->stop(), 0);                   // SIGTERM: a last checkpoint of each partition
  const auto stopped_at = per_partition(nodes_["a"]->log(), R"(partition (\d+): let go, checkpointed at sequence (\d+))");
  EXPECT_EQ(stopped_at.size(), 8u) << nodes_["a"]->log();
  for (int p = 0; p < 8; ++p) {
    EXPECT_TRUE(std::filesystem::exists(dir_ / "a" / "cluster" / "EBB" / ("partition-" + std::to_string(p)) / "checkpoints")) << p;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "a" / "wal"));  // JetStream is the log

  nodes_["a"] = node("a");
  for (int b = 0; b < 10; ++b) ASSERT_EQ(call(*nodes_["a"], "POST", "/events", batch(rng, 50, expected)).status, 204);
  expect_exact(*nodes_["a"], expected);
  // Every partition resumed where it stopped.
  EXPECT_EQ(per_partition(nodes_["a"]->log(), R"(partition (\d+): resuming from its checkpoint at sequence (\d+))"), stopped_at)
      << nodes_["a"]->log();

  // A new stream (NATS started afresh): the old checkpoints name another
  // stream's sequences, so they go, and the node counts the new log only.
  EXPECT_EQ(nodes_["a"]->stop(), 0);
  nats_ = std::make_unique<NatsServer>(dir_ / "nats-2");
  nodes_["a"] = node("a");
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  ASSERT_EQ(call(*nodes_["a"], "POST", "/events", R"({"namespace":"tags","events":[{"item_id":"x","weight":2}]})").status, 204);
  const TopK fresh = settled_top(*nodes_["a"], "/top-k?namespace=tags");
  EXPECT_EQ(fresh.total, 2);
  EXPECT_NE(nodes_["a"]->log().find("dropping the checkpoints in"), std::string::npos) << nodes_["a"]->log();
}


// A partition's owner uploads its checkpoints to JetStream: a node started
// on an empty disk after the only other one stopped resumes every
// partition from them, though the stream has lost every part meanwhile
// (purged here, as retention would): a replay from the start could count
// nothing. They travel in chunks (a 64 KiB max_payload), and older
// uploads are cleaned away.
TEST_F(Cluster, ANewOwnerResumesFromTheSharedCheckpointWithoutTheStreamsOldParts) {
  nats_ = std::make_unique<NatsServer>(dir_ / "nats-small", 64 * 1024);
  const std::vector<std::string> sharing{"--nats-checkpoint-interval", "1s"};
  nodes_["a"] = node("a", sharing);
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  std::mt19937_64 rng(31);
  std::map<std::string, double> expected;
  // Writes for 5 s: every partition uploads several times, so its first
  // uploads have been cleaned away.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(call(*nodes_["a"], "POST", "/events", batch(rng, 50, expected)).status, 204);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  double total = 0;
  for (const auto& [_, w] : expected) total += w;
  ASSERT_EQ(settled_top(*nodes_["a"], "/top-k?namespace=tags&k=300").total, total);
  EXPECT_EQ(nodes_["a"]->stop(), 0);  // SIGTERM: each partition checkpoints and shares a last time
  auto stopped_at = per_partition(nodes_["a"]->log(), R"(partition (\d+): let go, checkpointed at sequence (\d+))");
  ASSERT_EQ(stopped_at.size(), 8u) << nodes_["a"]->log();

  cluster::NatsClient client({nats_->url()}, "test");
  for (int p = 0; p < 8; ++p) {
    const auto m = client.last_message("EBB_checkpoints", "EBB.k." + std::to_string(p) + ".h", std::chrono::seconds(5));
    ASSERT_TRUE(m) << p;
    const auto head = cluster::decode_head(cluster::msg_data(m.get()));
    EXPECT_EQ(head.node_id, "a");
    EXPECT_EQ(head.partition, static_cast<std::uint32_t>(p));
    EXPECT_EQ(std::to_string(head.position), stopped_at[std::to_string(p)]) << p;
    EXPECT_GT(head.chunks.size(), 1u) << "partition " << p << ": " << head.bytes << " bytes in one message";
  }
  EXPECT_EQ(client.message_at("EBB_checkpoints", 1, std::chrono::seconds(5)), nullptr) << "the first upload's first chunk was kept";
  // Partition 0's newest head names a chunk the stream does not hold (as
  // after a cleaning race): its new owner takes the other kept head.
  const auto wait = std::chrono::seconds(5);
  auto newest0 = cluster::decode_head(cluster::msg_data(client.last_message("EBB_checkpoints", "EBB.k.0.h", wait).get()));
  const auto older0 = cluster::decode_head(cluster::msg_data(client.first_message("EBB_checkpoints", "EBB.k.0.h", wait).get()));
  ASSERT_LT(older0.position, newest0.position);
  newest0.chunks.back() += 1'000'000;
  client.publish("EBB.k.0.h", cluster::encode_head(newest0), "", wait);
  auto took_expected = stopped_at;
  took_expected["0"] = std::to_string(older0.position);
  // Every part of every batch before the oldest head kept is dropped.
  std::uint64_t oldest = UINT64_MAX;
  for (int p = 0; p < 8; ++p) {
    const auto m = client.first_message("EBB_checkpoints", "EBB.k." + std::to_string(p) + ".h", wait);
    oldest = std::min(oldest, cluster::decode_head(cluster::msg_data(m.get())).position);
  }
  client.drop_below("EBB", "EBB.p.*", oldest + 1);
  EXPECT_EQ(client.message_at("EBB", 2, wait), nullptr);  // the first batch's part (after the namespace's create)

  nodes_["b"] = node("b", sharing);
  const TopK got = settled_top(*nodes_["b"], "/top-k?namespace=tags&k=300");
  EXPECT_EQ(got.total, total);
  ASSERT_EQ(got.items.size(), expected.size());
  for (const auto& item : got.items) EXPECT_EQ(item.estimate, expected[item.id]) << item.id;
  EXPECT_EQ(per_partition(nodes_["b"]->log(), R"(partition (\d+): took the checkpoint a shared at sequence (\d+))"), took_expected)
      << nodes_["b"]->log();
  EXPECT_NE(nodes_["b"]->log().find("partition 0: its shared checkpoint at sequence " + std::to_string(newest0.position) + " (from a) cannot be read"),
            std::string::npos)
      << nodes_["b"]->log();
  // And it counts on from there.
  for (int b = 0; b < 5; ++b) ASSERT_EQ(call(*nodes_["b"], "POST", "/events", batch(rng, 50, expected)).status, 204);
  total = 0;
  for (const auto& [_, w] : expected) total += w;
  EXPECT_EQ(settled_top(*nodes_["b"], "/top-k?namespace=tags&k=300").total, total);
}

// Retention: once every partition and the catalog have shared a checkpoint,
// the node serving partition 0 drops the stream below what they all
// include (keeping at least --nats-retention). A node started afterwards
// on an empty disk takes its catalog from the shared snapshot (the
// namespace, an early batch's idempotency key) and its partitions from
// the shared checkpoints, and answers exactly, before and after the first
// node leaves; the early batch's retry counts nothing.
TEST_F(Cluster, RetentionDropsWhatEveryCheckpointIncludesAndANewNodeStillAnswersExactly) {
  const std::vector<std::string> args{"--nats-checkpoint-interval", "1s", "--nats-retention", "30s"};
  nodes_["a"] = node("a", args);
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  auto keyed = [&](const char* n) {
    HttpClient c(nodes_[n]->port());
    return c.request("POST", "/events", R"({"namespace":"tags","events":[{"item_id":"early","weight":7}]})", "application/json",
                     {{"Idempotency-Key", "early-1"}})
        .status;
  };
  ASSERT_EQ(keyed("a"), 204);
  std::map<std::string, double> expected{{"early", 7}};
  cluster::NatsClient client({nats_->url()}, "test");
  const std::uint64_t mark = client.last_sequence("EBB", "EBB.c", std::chrono::seconds(5));
  std::mt19937_64 rng(41);
  // Writes until the stream has dropped the early batch (every partition
  // shares a checkpoint each second, and retention keeps 30 s: half that
  // and a publish wait of 5 s of parts before the oldest checkpoint kept).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (client.first_sequence("EBB") <= mark) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the stream still starts at " << client.first_sequence("EBB") << ": "
                                                          << nodes_["a"]->log();
    ASSERT_EQ(call(*nodes_["a"], "POST", "/events", batch(rng, 50, expected)).status, 204);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  // (The node logs the purge once the server answered it: a moment after the stream moved.)
  for (int i = 0; i < 50 && nodes_["a"]->log().find("retention: the stream now starts at sequence") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(nodes_["a"]->log().find("retention: the stream now starts at sequence"), std::string::npos) << nodes_["a"]->log();
  // The namespaces bucket lost the namespace's entry (emptied by hand,
  // say), which a's mirror wrote once: b never applies the create (it
  // starts from the snapshot) and mirrors it from there.
  const cluster::KvPtr kv = client.bucket("EBB_namespaces", 1, std::chrono::milliseconds(0));
  ASSERT_EQ(kvStore_Delete(kv.get(), "tags"), NATS_OK);

  nodes_["b"] = node("b", args);
  EXPECT_NE(nodes_["b"]->log().find("catalog: took the snapshot a shared at sequence"), std::string::npos) << nodes_["b"]->log();
  const std::string mirrored =
      R"({"revision":1,"config":)" + service::write_namespace_spec(service::parse_namespace_spec(kNamespace, service::ServiceLimits{}), true) + "}";
  std::string held;
  for (int i = 0; i < 100 && held != mirrored; ++i) {
    kvEntry* e = nullptr;
    if (kvStore_Get(&e, kv.get(), "tags") == NATS_OK) {
      held = kvEntry_ValueString(e);
      kvEntry_Destroy(e);
    }
    if (held != mirrored) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(held, mirrored);
  expect_exact(*nodes_["b"], expected);  // (300 items and "early")
  EXPECT_EQ(keyed("b"), 204);  // the retry, through the node that never read the batch: counted once
  EXPECT_EQ(nodes_["a"]->stop(), 0);  // b takes every partition over, from a's last uploads
  expect_exact(*nodes_["b"], expected);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(call(*nodes_["b"], "POST", "/events", batch(rng, 50, expected)).status, 204);
  expect_exact(*nodes_["b"], expected);
  EXPECT_EQ(nodes_["b"]->log().find("which it still needs"), std::string::npos) << nodes_["b"]->log();
}

// A node paused (SIGSTOP) while retention dropped records its catalog had
// not read yet: once it runs again its catalog notices before it applies
// anything (the stream starts past what it needs), the node says it failed
// (/readyz 503, its log says why) and refuses writes, which count nothing;
// the other node, which took its partitions over, answers exactly.
TEST_F(Cluster, ANodeLeftBehindTheStreamsStartSaysSoAndWritesNothing) {
  const std::vector<std::string> args{"--nats-checkpoint-interval", "1s", "--nats-retention", "30s"};
  nodes_["a"] = node("a", args);
  nodes_["b"] = node("b", args);
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  std::mt19937_64 rng(43);
  std::map<std::string, double> expected;
  for (int i = 0; i < 5; ++i) ASSERT_EQ(call(*nodes_["a"], "POST", "/events", batch(rng, 50, expected)).status, 204);
  (void)settled_top(*nodes_["b"], "/top-k?namespace=tags&k=5");  // b's catalog has the namespace
  cluster::NatsClient client({nats_->url()}, "test");
  const std::uint64_t mark = client.last_sequence("EBB", "EBB.c", std::chrono::seconds(5));  // b has read at most this
  nodes_["b"]->signal(SIGSTOP);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(150);
  while (client.first_sequence("EBB") <= mark + 1) {
    if (std::chrono::steady_clock::now() >= deadline) {
      nodes_["b"]->signal(SIGCONT);
      FAIL() << "the stream still starts at " << client.first_sequence("EBB") << ": " << nodes_["a"]->log();
    }
    ASSERT_EQ(call(*nodes_["a"], "POST", "/events", batch(rng, 50, expected)).status, 204);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  nodes_["b"]->signal(SIGCONT);
  // (A 503 may say first that the connection to NATS is down, until it is back.)
  HttpResult ready;
  for (int i = 0; i < 600; ++i) {
    ready = call(*nodes_["b"], "GET", "/readyz");
    if (ready.body.find("catalog fell behind the start of the cluster's log") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(ready.status, 503) << ready.body;
  EXPECT_NE(ready.body.find("catalog fell behind the start of the cluster's log"), std::string::npos) << ready.body;
  EXPECT_NE(nodes_["b"]->log().find("which it still needs (retention dropped it while this node was behind)"), std::string::npos)
      << nodes_["b"]->log();
  const auto refused = call(*nodes_["b"], "POST", "/events", R"({"namespace":"tags","events":[{"item_id":"never","weight":1000}]})");
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.body.find("catalog_gapped"), std::string::npos) << refused.body;
  // A namespace made since, which b's catalog never read: b cannot tell
  // whether it exists, and says so (not a 404).
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", R"({"name":"later"})").status, 201);
  const auto unknown = call(*nodes_["b"], "GET", "/top-k?namespace=later");
  EXPECT_EQ(unknown.status, 503) << unknown.body;
  EXPECT_NE(unknown.body.find("catalog fell behind the start of the cluster's log"), std::string::npos) << unknown.body;
  expect_exact(*nodes_["a"], expected);
}

// Every create, patch and delete that took effect reaches the
// <stream>_namespaces bucket, each at its commit-subject sequence (this
// stream's first records: 1-6).
TEST_F(Cluster, TheNamespacesAreMirroredInAKeyValueBucket) {
  start({"a", "b"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  ASSERT_EQ(call(*nodes_["b"], "PATCH", "/namespaces/tags", R"({"k":5})").status, 200);
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", R"({"name":"old.one"})").status, 201);
  ASSERT_EQ(call(*nodes_["b"], "DELETE", "/namespaces/old.one").status, 204);
  service::ServiceLimits limits;
  const auto tags = service::patch_namespace_spec(service::parse_namespace_spec(kNamespace, limits), R"({"k":5})", limits);
  const std::map<std::string, std::string> want = {
      {"tags", R"({"revision":2,"config":)" + service::write_namespace_spec(tags, true) + "}"},
      {"old=2Eone", R"({"revision":4,"deleted":true})"},
      {"later", R"({"revision":6,"config":)" + service::write_namespace_spec(service::parse_namespace_spec(R"({"name":"later"})", limits), true) + "}"},
  };
  cluster::NatsClient client({nats_->url()}, "test");
  // A create of "tags" that lost the race to the first (as a node that had
  // not seen it yet would log it): the catalogs keep the first, and so
  // must the bucket, though this one's revision (5) is newer.
  service::AdminRecord lost;
  lost.type = service::RecordType::create;
  const std::string lost_config = service::write_namespace_spec(service::parse_namespace_spec(R"({"name":"tags","k":9})", limits), true);
  lost.config_json = lost_config;
  EXPECT_EQ(client.publish("EBB.c", service::encode_admin(lost), "lost-create", std::chrono::milliseconds(5000)), 5u);
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", R"({"name":"later"})").status, 201);  // 6: both catalogs are past 5 once it is mirrored
  const cluster::KvPtr kv = client.bucket("EBB_namespaces", 1, std::chrono::milliseconds(0));
  std::map<std::string, std::string> got;
  for (int i = 0; i < 100 && got != want; ++i) {
    got.clear();
    for (const auto& [key, _] : want) {
      kvEntry* e = nullptr;
      if (kvStore_Get(&e, kv.get(), key.c_str()) != NATS_OK) continue;
      got[key] = kvEntry_ValueString(e);
      kvEntry_Destroy(e);
    }
    if (got != want) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(got, want);
}

TEST_F(Cluster, WithNatsDownWritesAreRefusedNeverAcknowledged) {
  start({"a"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  nats_->stop();
  // Not ready, saying why; a batch is refused (503), not acknowledged.
  HttpResult ready;
  for (int i = 0; i < 100; ++i) {
    ready = call(*nodes_["a"], "GET", "/readyz");
    if (ready.status == 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("NATS"), std::string::npos) << ready.body;
  const auto r = call(*nodes_["a"], "POST", "/events", R"({"namespace":"tags","events":[{"item_id":"x"}]})");
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_NE(r.body.find("nothing was written"), std::string::npos) << r.body;
  EXPECT_EQ(call(*nodes_["a"], "GET", "/top-k?namespace=tags").status, 503);
  const auto incr = call(*nodes_["a"], "GET", "/incr?distribution=d&field=f");
  EXPECT_EQ(incr.status, 503) << incr.body;
  EXPECT_NE(incr.body.find("nothing was written"), std::string::npos) << incr.body;
}

// Many askers of one top-k at once share fan-outs, and each still reads
// every write acknowledged before it asked: the total of each answer is
// at least the weight acknowledged (anywhere) before its query began.
TEST_F(Cluster, TopKAskersAtOnceShareFanOutsAndStillReadTheirWrites) {
  start({"a", "b"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  (void)settled_top(*nodes_["b"], "/top-k?namespace=tags");
  std::atomic<int> acknowledged{0};
  std::atomic<int> short_answers{0}, failures{0};
  std::vector<std::thread> askers;
  for (int t = 0; t < 8; ++t) {
    askers.emplace_back([&, t] {
      const EbbServer& writer = *nodes_[t % 2 ? "a" : "b"];
      const EbbServer& reader = *nodes_[t % 2 ? "b" : "a"];
      for (int i = 0; i < 25; ++i) {
        const auto w = call(writer, "POST", "/events", R"({"namespace":"tags","events":[{"item_id":"t)" + std::to_string(t) + R"("}]})");
        if (w.status != 204) {
          ++failures;
          continue;
        }
        ++acknowledged;
        const int before = acknowledged.load();
        const auto r = call(reader, "GET", "/top-k?namespace=tags&k=20");
        const TopK top = parse_top(r.body);
        if (r.status != 200) ++failures;
        else if (!top.partial && top.total < before) ++short_answers;  // (a partial one says it may be short)
      }
    });
  }
  for (auto& a : askers) a.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(short_answers.load(), 0);
  EXPECT_EQ(settled_top(*nodes_["a"], "/top-k?namespace=tags").total, 200);
}

// A node stopping while NATS does not answer (paused): its client's waits
// would add up past --shutdown-timeout; at the deadline (and 5 s to let
// partitions go) it exits at once, saying so (nothing acknowledged is at
// stake: JetStream holds it).
TEST_F(Cluster, AStopWithNatsNotAnsweringEndsAtTheShutdownTimeout) {
  nodes_["a"] = node("a", {"--shutdown-timeout", "2s"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  nats_->signal(SIGSTOP);
  EXPECT_EQ(nodes_["a"]->stop(), 1);
  nats_->signal(SIGCONT);
  EXPECT_NE(nodes_["a"]->log().find("stopping took longer than --shutdown-timeout and the time to let partitions go (7 s in all; NATS not "
                                    "answering?): exiting now"),
            std::string::npos)
      << nodes_["a"]->log();
  nodes_.erase("a");
}

struct Trend {
  std::string id;
  double score = 0;
};

std::vector<Trend> parse_trending(const std::string& body, bool& partial) {
  simdjson::dom::parser p;
  simdjson::dom::element e;
  std::vector<Trend> out;
  partial = true;
  if (p.parse(body).get(e)) {
    ADD_FAILURE() << "not JSON: " << body;
    return out;
  }
  for (auto item : e["items"].get_array()) out.push_back({std::string(std::string_view(item["item_id"])), double(item["score"])});
  simdjson::dom::element cluster;
  partial = e["cluster"].get(cluster) || bool(cluster["partial"]);
  return out;
}

std::string item_in_another_partition(const std::string& stem, std::initializer_list<std::string> others) {
  for (int i = 0;; ++i) {
    std::string id = stem + std::to_string(i);
    bool apart = true;
    for (const auto& o : others) apart = apart && service::partition_of(hash_key(id), 8) != service::partition_of(hash_key(o), 8);
    if (apart) return id;
  }
}

// GET /trending and GET /hot-keys over the partitions answer as a single
// node fed the same events. The stream's first event ("steady", an hour
// ago) is in another partition than the surging items: a partition that
// measured the stream's age from its own first event would score them
// against a minute of history, not an hour.
TEST_F(Cluster, TrendingAndHotKeysAnswerAsOneNode) {
  start({"a", "b"});
  auto dir = testing::make_temp_dir("ebb-single");
  EbbServer single(dir, {"--fsync", "off"});
  const char* spec = R"({"name":"tags","half_lives":["5m","1h"],"k":10,"hot_key_threshold":20})";
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", spec).status, 201);
  ASSERT_EQ(call(single, "POST", "/namespaces", spec).status, 201);
  const std::string fresh = item_in_another_partition("new-", {"steady"});
  const std::string hot_a = item_in_another_partition("hot-", {"steady", fresh});
  const std::string hot_b = item_in_another_partition("hot-", {"steady", fresh, hot_a});
  const auto t0 = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()) - 3600;
  std::string history = R"({"namespace":"tags","events":[)";
  auto event = [](std::string& body, const std::string& item, long t) {
    if (body.back() != '[') body += ',';
    body += R"({"item_id":")";
    body += item;
    body += R"(","timestamp":)";
    body += std::to_string(t);
    body += '}';
  };
  for (int i = 0; i < 3600; ++i) event(history, "steady", t0 + i);
  for (int i = 0; i < 60; ++i) event(history, fresh, t0 + 3540 + i);
  history += "]}";
  // Now: two keys at 1000 and 700 events (about 69 and 49 events/s for the detector's 10 s half-life).
  std::string now = R"({"namespace":"tags","events":[)";
  for (int i = 0; i < 1000; ++i) {
    if (i) now += ',';
    now += R"({"item_id":")";
    now += i < 700 ? hot_b : hot_a;
    now += R"("},{"item_id":")";
    now += hot_a;
    now += R"("})";
  }
  now += "]}";
  for (const auto& body : {history, now}) {
    ASSERT_EQ(call(*nodes_["b"], "POST", "/events", body).status, 204);
    ASSERT_EQ(call(single, "POST", "/events", body).status, 204);
  }

  for (const char* id : {"a", "b"}) {
    // Settled (every partition answers), then the single node and the
    // node again at once: the same items in the same order, the same
    // scores but for the few milliseconds between the questions.
    bool partial = true;
    for (int i = 0; i < 300 && partial; ++i) {
      const auto r = call(*nodes_[id], "GET", "/trending?namespace=tags");
      ASSERT_EQ(r.status, 200) << r.body;
      parse_trending(r.body, partial);
      if (partial) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_FALSE(partial) << id;
    bool single_partial = false;
    const auto want = parse_trending(call(single, "GET", "/trending?namespace=tags").body, single_partial);
    const auto r = call(*nodes_[id], "GET", "/trending?namespace=tags");
    const auto got = parse_trending(r.body, partial);
    EXPECT_FALSE(partial);
    ASSERT_EQ(want.size(), 3u);
    ASSERT_EQ(got.size(), want.size()) << r.body;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].id, want[i].id) << id << " rank " << i + 1;
      EXPECT_NEAR(got[i].score, want[i].score, 1e-3 * want[i].score) << id << " " << want[i].id << ": " << r.body;
    }
    EXPECT_EQ(want.back().id, fresh);

    // Hot keys: the union of the partitions' lists. (Each partition answers
    // as of its last evaluation, at most --hot-key-interval old: one made
    // before its part of the batch came is not wrong, only older.)
    std::set<std::string> hot;
    std::string body;
    for (int i = 0; i < 100; ++i) {
      const auto h = call(*nodes_[id], "GET", "/hot-keys?namespace=tags");
      ASSERT_EQ(h.status, 200) << h.body;
      body = h.body;
      simdjson::dom::parser p;
      simdjson::dom::element e = p.parse(body);
      hot.clear();
      for (auto k : e["items"].get_array()) {
        hot.insert(std::string(std::string_view(k["item_id"])));
        EXPECT_GE(double(k["rate"]), 20) << body;
      }
      if (!bool(e["cluster"]["partial"]) && bool(e["complete"]) && hot.size() == 2) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(hot, (std::set<std::string>{hot_a, hot_b})) << body;
    // (An answer is as of the last evaluation, at most --hot-key-interval old.)
    HttpResult s;
    for (int i = 0; i < 100; ++i) {
      s = call(single, "GET", "/hot-keys?namespace=tags");
      if (s.body.find(hot_a) != std::string::npos && s.body.find(hot_b) != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_NE(s.body.find(hot_a), std::string::npos) << s.body;
    EXPECT_NE(s.body.find(hot_b), std::string::npos) << s.body;
  }
  // Errors are a single node's.
  const auto bad = call(*nodes_["a"], "GET", "/trending?namespace=tags&long=1d");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("long: namespace 'tags' keeps no half-life 1d"), std::string::npos) << bad.body;
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", R"({"name":"plain"})").status, 201);
  EXPECT_NE(call(*nodes_["b"], "GET", "/hot-keys?namespace=plain").body.find("hot_keys_off"), std::string::npos);
  EXPECT_EQ(single.stop(), 0);
  std::filesystem::remove_all(dir);
}


// A distribution's answer without its last write's time (each node stamps
// its own receive time).
std::string without_t(const std::string& body) { return std::regex_replace(body, std::regex(R"("T":[0-9.e+]+)"), R"("T":<T>)"); }

// Distributions (bitly's Forget Table routes) live whole in the partition
// of their name: written through any node, read through any node, the
// answers are a single node's. No decay (--distribution-rate 0), so they
// are exact whenever asked.
TEST_F(Cluster, DistributionsAnswerAsOneNode) {
  const std::vector<std::string> flags{"--distribution-rate", "0", "--distribution-max-bins", "3"};
  nodes_["a"] = node("a", flags);
  nodes_["b"] = node("b", flags);
  auto dir = testing::make_temp_dir("ebb-single");
  EbbServer single(dir, {"--fsync", "off", "--distribution-rate", "0", "--distribution-max-bins", "3"});
  // Until every partition has an owner, reads may answer 503.
  auto settled = [&](const EbbServer& s, const std::string& target) {
    HttpResult r;
    for (int i = 0; i < 300; ++i) {
      r = call(s, "GET", target);
      if (r.status != 503) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return r;
  };
  ASSERT_EQ(settled(*nodes_["a"], "/dbsize").body, R"({"status_code":200,"status_txt":"","data":0})");
  const char* ids[] = {"a", "b"};
  for (int i = 0; i < 20; ++i) {
    const std::string target =
        "/incr?distribution=d" + std::to_string(i % 5) + "&field=f" + std::to_string(i % 3) + "&N=" + std::to_string(i + 1);
    const auto r = call(*nodes_[ids[i % 2]], "GET", target);
    ASSERT_EQ(r.status, 200) << target << ": " << r.body;
    ASSERT_EQ(r.body, "OK");
    ASSERT_EQ(call(single, "GET", target).body, "OK");
  }
  // Past the bins limit, refused by the distribution's owner, as a single node refuses it.
  const std::string over = "/incr?distribution=d0&field=x&field=y";
  const auto refused = call(*nodes_["b"], "GET", over);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.body, call(single, "GET", over).body);
  EXPECT_EQ(call(*nodes_["a"], "GET", "/incr?distribution=d0").body, call(single, "GET", "/incr?distribution=d0").body);

  for (const char* id : ids) {
    for (int d = 0; d < 5; ++d) {
      const std::string target = "/dist?distribution=d" + std::to_string(d);
      EXPECT_EQ(without_t(settled(*nodes_[id], target).body), without_t(call(single, "GET", target).body)) << id << " " << target;
    }
    for (const std::string target : {"/get?distribution=d1&field=f2&field=zz&field=f0", "/nmostprobable?distribution=d2&N=2",
                                      "/dist?distribution=nothing&rate=0.5", "/get?distribution=d3&field=f1&rate=1e9"}) {
      EXPECT_EQ(without_t(settled(*nodes_[id], target).body), without_t(call(single, "GET", target).body)) << id << " " << target;
    }
    EXPECT_EQ(settled(*nodes_[id], "/dbsize").body, R"({"status_code":200,"status_txt":"","data":5})");
  }
  const std::string bad_rate = "/dist?distribution=d1&rate=-1";
  EXPECT_EQ(call(*nodes_["a"], "GET", bad_rate).body, call(single, "GET", bad_rate).body);
  EXPECT_EQ(single.stop(), 0);
  std::filesystem::remove_all(dir);
}


// --max-distribution-bins in a cluster: each partition holds its share (the
// limit over the partitions), checked by the distribution's owner; an
// increment adding no bin always passes.
TEST_F(Cluster, EachPartitionHoldsItsShareOfTheDistributionsBins) {
  nodes_["a"] = node("a", {"--max-distribution-bins", "16", "--distribution-rate", "0"});  // 8 partitions: 2 bins each
  nodes_["b"] = node("b", {"--max-distribution-bins", "16", "--distribution-rate", "0"});
  auto settled = [&](const std::string& target) {
    HttpResult r;
    for (int i = 0; i < 300; ++i) {
      r = call(*nodes_["b"], "GET", target);
      if (r.status != 503) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return r;
  };
  ASSERT_EQ(settled("/dbsize").status, 200);
  ASSERT_EQ(call(*nodes_["a"], "GET", "/incr?distribution=d&field=f1&field=f2").body, "OK");
  ASSERT_EQ(settled("/get?distribution=d&field=f1").status, 200);  // applied by its owner
  const auto refused = call(*nodes_["a"], "GET", "/incr?distribution=d&field=f3");
  EXPECT_EQ(refused.status, 507) << refused.body;
  EXPECT_NE(refused.body.find("bins: this distribution's partition holds 2 bins, its share of the limit is 2 (--max-distribution-bins over 8 "
                              "partitions)"),
            std::string::npos)
      << refused.body;
  EXPECT_EQ(call(*nodes_["b"], "GET", "/incr?distribution=d&field=f2&N=3").body, "OK");  // no new bin
  const auto dist = settled("/dist?distribution=d").body;
  EXPECT_EQ(dist.find("f3"), std::string::npos) << dist;  // the refused increment counted nothing
  EXPECT_NE(dist.find(R"({"bin":"f2","count":4,)"), std::string::npos) << dist;
}

// GET /hot-keys/stream on a cluster node follows the partitions: a key
// written through another node turns hot on the stream, cools (with its
// rate then, under 0.8 x the threshold) and the stream ends when another
// node deletes the namespace.
TEST_F(Cluster, AHotKeyStreamFollowsThePartitions) {
  start({"a", "b"});
  // A one-second half-life: 100 events now are about 69 events/s, under 16 within 2.2 s.
  ASSERT_EQ(call(*nodes_["b"], "POST", "/namespaces", R"({"name":"hot","windows":["all"],"hot_key_threshold":20,"hot_key_half_life":"1s"})").status,
            201);
  settled_top(*nodes_["a"], "/top-k?namespace=hot");
  testing::SseReader stream(nodes_["a"]->port(), "/hot-keys/stream?namespace=hot");
  ASSERT_NE(stream.head().find("200 OK"), std::string::npos) << stream.head();
  EXPECT_EQ(stream.message(), "retry: 2000");
  std::string body = R"({"namespace":"hot","events":[)";
  for (int i = 0; i < 100; ++i) body += i ? R"(,{"item_id":"k"})" : R"({"item_id":"k"})";
  ASSERT_EQ(call(*nodes_["b"], "POST", "/events", body + "]}").status, 204);
  const auto hot = testing::parse_notice(stream.message());
  EXPECT_EQ(hot.event, "hot");
  EXPECT_EQ(hot.item_id, "k");
  EXPECT_GE(hot.rate, 20);
  const auto cool = testing::parse_notice(stream.message());
  EXPECT_EQ(cool.event, "cool");
  EXPECT_EQ(cool.item_id, "k");
  EXPECT_LT(cool.rate, 16);
  EXPECT_GT(cool.rate, 0);
  EXPECT_EQ(cool.since, hot.since);
  // Hot again; then detection turned off on the other node: it cools at once.
  ASSERT_EQ(call(*nodes_["b"], "POST", "/events", body + "]}").status, 204);
  EXPECT_EQ(testing::parse_notice(stream.message()).event, "hot");
  ASSERT_EQ(call(*nodes_["b"], "PATCH", "/namespaces/hot", R"({"hot_key_threshold":null})").status, 200);
  const auto off = testing::parse_notice(stream.message());
  EXPECT_EQ(off.event, "cool");
  EXPECT_EQ(off.item_id, "k");
  ASSERT_EQ(call(*nodes_["b"], "DELETE", "/namespaces/hot").status, 204);
  EXPECT_EQ(testing::parse_notice(stream.message()).event, "end");
  EXPECT_EQ(stream.message(), "");
  EXPECT_TRUE(stream.closed());
}


// JetStream drops a reader idle past its threshold (--nats-consumer-idle,
// 2 s here): a partition that had no write for longer still counts the
// next one at once (its reader is made again), where it used to wait 30 s
// for a reader the server had dropped.
TEST_F(Cluster, APartitionIdleLongerThanItsReadersLifeCountsTheNextWriteAtOnce) {
  nodes_["a"] = node("a", {"--nats-consumer-idle", "2s", "--distribution-rate", "0"});
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  settled_top(*nodes_["a"], "/top-k?namespace=tags");
  const std::string one = R"({"namespace":"tags","events":[{"item_id":"x"}]})";
  for (int round = 1; round <= 3; ++round) {
    ASSERT_EQ(call(*nodes_["a"], "POST", "/events", one).status, 204);
    ASSERT_EQ(call(*nodes_["a"], "GET", "/incr?distribution=d&field=f").status, 200);
    // Read-your-writes within --nats-query-timeout (2 s): 503 if the partition is stuck.
    const auto r = call(*nodes_["a"], "GET", "/count?namespace=tags&item_id=x");
    ASSERT_EQ(r.status, 200) << "round " << round << ": " << r.body;
    simdjson::dom::parser p;
    EXPECT_EQ(double(p.parse(r.body)["estimated_count"]), round);
    const auto d = call(*nodes_["a"], "GET", "/get?distribution=d&field=f");
    ASSERT_EQ(d.status, 200) << d.body;
    EXPECT_NE(d.body.find(R"("count":)" + std::to_string(round) + ","), std::string::npos) << d.body;
    std::this_thread::sleep_for(std::chrono::milliseconds(4500));  // past the readers' life
  }
}


// As of a past time, from the partitions' memory (their windows' rings):
// the answers of a single node fed the same timestamped events. Past what
// memory and history hold, a clear 400.
TEST_F(Cluster, AsOfAPastTimeAnswersFromThePartitionsMemory) {
  start({"a", "b"});
  auto dir = testing::make_temp_dir("ebb-single");
  EbbServer single(dir, {"--fsync", "off"});
  const char* spec = R"({"name":"w","windows":["1h"],"k":10})";
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", spec).status, 201);
  ASSERT_EQ(call(single, "POST", "/namespaces", spec).status, 201);
  const auto t0 = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  std::string body = R"({"namespace":"w","events":[)";
  for (int i = 0; i < 200; ++i) {
    if (i) body += ',';
    body += R"({"item_id":"item-)";
    body += std::to_string(i % 7);
    body += R"(","weight":)";
    body += std::to_string(i % 5 + 1);
    body += R"(,"timestamp":)";
    body += std::to_string(t0 - 400 + 2 * i);
    body += '}';
  }
  body += "]}";
  ASSERT_EQ(call(*nodes_["b"], "POST", "/events", body).status, 204);
  ASSERT_EQ(call(single, "POST", "/events", body).status, 204);
  const std::string as_of = std::to_string(t0 - 250);  // (well past every ring's finest level: a cover exact to a minute on each)
  settled_top(*nodes_["a"], "/top-k?namespace=w");
  const auto want = call(single, "GET", "/top-k?namespace=w&timestamp=" + as_of);
  ASSERT_EQ(want.status, 200) << want.body;
  EXPECT_NE(want.body.find(R"("source":"memory")"), std::string::npos) << want.body;
  const TopK expected = parse_top(want.body);
  ASSERT_EQ(expected.items.size(), 7u);
  for (const char* id : {"a", "b"}) {
    const auto r = call(*nodes_[id], "GET", "/top-k?namespace=w&timestamp=" + as_of);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.body.find(R"("source":"memory")"), std::string::npos) << r.body;
    const TopK got = parse_top(r.body);
    EXPECT_FALSE(got.partial);
    EXPECT_EQ(got.total, expected.total) << r.body;
    EXPECT_EQ(got.items, expected.items) << r.body << "\n" << want.body;
    const std::string count = "/count?namespace=w&item_id=item-3&timestamp=" + as_of;
    simdjson::dom::parser p, q;
    EXPECT_EQ(double(p.parse(call(*nodes_[id], "GET", count).body)["estimated_count"]),
              double(q.parse(call(single, "GET", count).body)["estimated_count"]));
  }
  // Past memory, and before any partition's history began.
  const auto old = call(*nodes_["a"], "GET", "/top-k?namespace=w&timestamp=1000000");
  EXPECT_EQ(old.status, 400) << old.body;
  EXPECT_NE(old.body.find("no snapshot of the window 1h view at or before it"), std::string::npos) << old.body;
  EXPECT_EQ(single.stop(), 0);
  std::filesystem::remove_all(dir);
}

// History in a cluster: each partition snapshots its own items; GET
// /history asks the item's partition, and GET /top-k as of a time past
// every view's memory merges the partitions' snapshots, through any node.
TEST_F(Cluster, HistoryComesFromThePartitionsSnapshots) {
  const std::vector<std::string> flags{"--history-interval", "1s"};
  nodes_["a"] = node("a", flags);
  nodes_["b"] = node("b", flags);
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  settled_top(*nodes_["b"], "/top-k?namespace=tags");
  const double t0 = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::mt19937_64 rng(5);
  std::map<std::string, double> expected;
  for (int b = 0; b < 20; ++b) ASSERT_EQ(call(*nodes_[b % 2 ? "b" : "a"], "POST", "/events", batch(rng, 50, expected)).status, 204);
  settled_top(*nodes_["a"], "/top-k?namespace=tags");  // every partition has applied them
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // then snapshotted them (every second)
  const double t1 = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

  // An item's series: its last point is its count.
  simdjson::dom::parser p;
  const auto h = call(*nodes_["b"], "GET", "/history?namespace=tags&item_id=item-0&from=" + std::to_string(t0) + "&to=" + std::to_string(t1));
  ASSERT_EQ(h.status, 200) << h.body;
  simdjson::dom::array points = p.parse(h.body)["points"].get_array();
  ASSERT_GT(points.size(), 0u) << h.body;
  simdjson::dom::element last;
  for (auto point : points) last = point;
  EXPECT_EQ(double(last["estimated_count"]), expected["item-0"]) << h.body;
  EXPECT_EQ(int64_t(last["rank"]), 1) << h.body;

  // The list as of a moment ago: an all-time view keeps no past in memory,
  // so it comes from the partitions' snapshots, and is the exact list.
  const auto r = call(*nodes_["a"], "GET", "/top-k?namespace=tags&k=20&timestamp=" + std::to_string(t1 - 0.2));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("source":"history")"), std::string::npos) << r.body;
  const TopK got = parse_top(r.body);
  EXPECT_FALSE(got.partial);
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [item, count] : expected) ranked.emplace_back(-count, item);
  std::sort(ranked.begin(), ranked.end());
  ASSERT_EQ(got.items.size(), 20u) << r.body;
  for (std::size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(got.items[i].id, ranked[i].second) << "rank " << i + 1;
    EXPECT_EQ(got.items[i].estimate, -ranked[i].first) << ranked[i].second;
  }
  // An item's partition without history for then: a clear 400.
  const auto none = call(*nodes_["a"], "GET", "/count?namespace=tags&item_id=item-0&timestamp=1000000");
  EXPECT_EQ(none.status, 400) << none.body;
  // Deleted and made again: the new namespace has none of the old one's history.
  ASSERT_EQ(call(*nodes_["b"], "DELETE", "/namespaces/tags").status, 204);
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", kNamespace).status, 201);
  const auto fresh = call(*nodes_["b"], "GET", "/history?namespace=tags&item_id=item-0&from=" + std::to_string(t0) + "&to=" + std::to_string(t1 + 5));
  ASSERT_EQ(fresh.status, 200) << fresh.body;
  // (The new namespace may have been snapshotted already, empty: a point
  // where the item has no count, which is its own history, not the old one's.)
  for (auto point : p.parse(fresh.body)["points"].get_array()) {
    EXPECT_TRUE(point["estimated_count"].is_null()) << fresh.body;
    EXPECT_EQ(double(point["upper_bound"]), 0.0) << fresh.body;
  }
}

// An event-clock namespace in a cluster: every partition checks its part
// of a batch against the clock the writing node checked it against, and
// moves its clock with every batch, a part of it or not, so answers (decayed
// and windowed, "now" the newest event time) equal a single node's.
TEST_F(Cluster, AnEventClockNamespaceAnswersAsOneNode) {
  start({"a", "b"});
  auto dir = testing::make_temp_dir("ebb-single");
  EbbServer single(dir, {"--fsync", "off"});
  const char* spec = R"({"name":"ev","clock":"event","half_lives":["1m"],"windows":["10m"],"k":10,"max_event_age":"1h"})";
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", spec).status, 201);
  ASSERT_EQ(call(single, "POST", "/namespaces", spec).status, 201);
  settled_top(*nodes_["b"], "/top-k?namespace=ev");
  std::mt19937_64 rng(11);
  const long base = 1700000000;
  for (int b = 0; b < 12; ++b) {
    std::string body = R"({"namespace":"ev","events":[)";
    for (int i = 0; i < 40; ++i) {
      if (i) body += ',';
      // Mostly in order, some late; each batch ends later than the last.
      const long t = base + 60 * b + static_cast<long>(rng() % 60) - (i % 7 == 0 ? 90 : 0);
      body.append(R"({"item_id":"e)").append(std::to_string(rng() % 25)).append(R"(","weight":)").append(std::to_string(1 + rng() % 3));
      body.append(R"(,"timestamp":)").append(std::to_string(t)).append("}");
    }
    body += "]}";
    ASSERT_EQ(call(*nodes_[b % 2 ? "b" : "a"], "POST", "/events", body).status, 204) << body;
    ASSERT_EQ(call(single, "POST", "/events", body).status, 204);
  }
  // An event an hour older than the newest is refused by the cluster as by a single node.
  std::string too_old = R"({"namespace":"ev","events":[{"item_id":"x","timestamp":)";
  too_old.append(std::to_string(base - 3000)).append("}]}");
  const auto refused = call(*nodes_["b"], "POST", "/events", too_old);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.body, call(single, "POST", "/events", too_old).body);

  for (const std::string query : {"/top-k?namespace=ev", "/top-k?namespace=ev&half_life=1m", "/top-k?namespace=ev&window=10m"}) {
    settled_top(*nodes_["a"], query);
    const auto want = call(single, "GET", query);
    const TopK expected = parse_top(want.body);
    ASSERT_GT(expected.items.size(), 5u) << want.body;
    simdjson::dom::parser p, q;
    for (const char* id : {"a", "b"}) {
      const auto got_body = call(*nodes_[id], "GET", query).body;
      const TopK got = parse_top(got_body);
      EXPECT_FALSE(got.partial);
      EXPECT_EQ(double(p.parse(got_body)["as_of"]), double(q.parse(want.body)["as_of"])) << query;  // the newest event time
      ASSERT_EQ(got.items.size(), expected.items.size()) << got_body << "\n" << want.body;
      for (std::size_t i = 0; i < got.items.size(); ++i) {
        EXPECT_EQ(got.items[i].id, expected.items[i].id) << query << " rank " << i + 1;
        EXPECT_NEAR(got.items[i].estimate, expected.items[i].estimate, 1e-9 * expected.items[i].estimate) << query << " " << got.items[i].id;
      }
    }
  }
  // As of past times: every partition's buckets turned with the
  // namespace's newest event (its own events or not), so each picks the
  // window a single node picks, and the parts add up to its answer. Some
  // of these times are past a partition's own newest event but before the
  // namespace's (an end rounded down to a bucket boundary, as on a single
  // node), and a wall-clock namespace's windows likewise.
  const double now = std::floor(wall_clock_now());
  const char* wall_spec = R"({"name":"wl","windows":["1m","10m"],"k":20})";
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", wall_spec).status, 201);
  ASSERT_EQ(call(single, "POST", "/namespaces", wall_spec).status, 201);
  std::string wall_body = R"({"namespace":"wl","events":[)";
  for (int i = 0; i < 60; ++i) {
    if (i) wall_body += ',';
    wall_body.append(R"({"item_id":"w)").append(std::to_string(i % 17)).append(R"(","timestamp":)");
    wall_body.append(std::to_string(static_cast<long>(now) - 300 + 5 * i)).append("}");
  }
  wall_body += "]}";
  ASSERT_EQ(call(*nodes_["b"], "POST", "/events", wall_body).status, 204);
  ASSERT_EQ(call(single, "POST", "/events", wall_body).status, 204);
  settled_top(*nodes_["a"], "/top-k?namespace=wl");
  int from_memory = 0;  // answers the single node gave from its buckets (the rest: 400, beyond them)
  auto same_as_of = [&](const std::string& query) {
    simdjson::dom::parser p, q;
    const auto want_answer = call(single, "GET", query);
    const auto& want_body = want_answer.body;
    if (want_answer.status != 200) {
      for (const char* id : {"a", "b"}) EXPECT_EQ(call(*nodes_[id], "GET", query).status, want_answer.status) << query << ": " << want_body;
      return;
    }
    ++from_memory;
    const auto want = q.parse(want_body);
    for (const char* id : {"a", "b"}) {
      const auto got_answer = call(*nodes_[id], "GET", query);
      const auto& got_body = got_answer.body;
      ASSERT_EQ(got_answer.status, 200) << query << ": " << got_body;
      const auto got = p.parse(got_body);
      for (const char* bound : {"start", "end"}) {
        EXPECT_EQ(double(got["window"][bound]), double(want["window"][bound])) << query << "\n" << got_body << "\n" << want_body;
      }
      EXPECT_EQ(double(got["total"]), double(want["total"])) << query;
      EXPECT_EQ(std::string_view(got["source"]), std::string_view(want["source"])) << query;
      const TopK mine = parse_top(got_body), theirs = parse_top(want_body);
      EXPECT_FALSE(mine.partial);
      ASSERT_EQ(mine.items.size(), theirs.items.size()) << query << "\n" << got_body << "\n" << want_body;
      for (std::size_t i = 0; i < mine.items.size(); ++i) {
        EXPECT_EQ(mine.items[i].id, theirs.items[i].id) << query << " rank " << i + 1;
        EXPECT_EQ(mine.items[i].estimate, theirs.items[i].estimate) << query << " " << mine.items[i].id;
      }
    }
  };
  for (long at = base + 560; at < base + 730; at += 13) same_as_of("/top-k?namespace=ev&window=10m&timestamp=" + std::to_string(at));
  for (long back = 160; back > 0; back -= 11) {
    for (const char* window : {"1m", "10m"}) {
      same_as_of("/top-k?namespace=wl&window=" + std::string(window) + "&timestamp=" + std::to_string(static_cast<long>(now) - back));
    }
  }
  EXPECT_GE(from_memory, 15) << "the fixture asks too few times the buckets still hold";

  // Both nodes stop (each partition checkpoints its clock, moved by
  // batches it had no part of too) and start again: the same answers.
  EXPECT_EQ(nodes_["a"]->stop(), 0);
  EXPECT_EQ(nodes_["b"]->stop(), 0);
  nodes_["a"] = node("a");
  nodes_["b"] = node("b");
  for (const std::string again : {"/top-k?namespace=ev", "/top-k?namespace=ev&half_life=1m"}) {
    const TopK want = parse_top(call(single, "GET", again).body);
    const TopK got = settled_top(*nodes_["b"], again);
    ASSERT_EQ(got.items.size(), want.items.size());
    for (std::size_t i = 0; i < got.items.size(); ++i) {
      EXPECT_EQ(got.items[i].id, want.items[i].id) << again << " after a restart, rank " << i + 1;
      EXPECT_NEAR(got.items[i].estimate, want.items[i].estimate, 1e-9 * want.items[i].estimate) << again;
    }
  }
  EXPECT_EQ(single.stop(), 0);
  std::filesystem::remove_all(dir);
}

// The Redis protocol on cluster nodes: RedisBloom's TOPK and CMS commands,
// sent through either node with redis-cli, answer exactly as a single node
// fed the same commands, the items each ADD pushed out of the list
// included; pipelined adds too (one batch), and GET /namespaces' stats are
// what the partitions counted.
TEST_F(Cluster, RedisCommandsAnswerAsOneNode) {
  nodes_["a"] = node("a", {"--resp-port", "0"});
  nodes_["b"] = node("b", {"--resp-port", "0"});
  auto dir = testing::make_temp_dir("ebb-single");
  EbbServer single(dir, {"--fsync", "off", "--resp-port", "0"});
  const unsigned short ports[] = {nodes_["a"]->resp_port(), nodes_["b"]->resp_port()};
  int turn = 0;
  // The command through the next node in turn and through the single node: the same reply.
  auto same = [&](const std::vector<std::string>& args) {
    const std::string want = testing::redis_cli(single.resp_port(), args);
    const std::string got = testing::redis_cli(ports[turn++ % 2], args);
    std::string shown;
    for (const auto& a : args) shown.append(a).append(" ");
    EXPECT_EQ(got, want) << shown;
    return got;
  };
  ASSERT_EQ(same({"TOPK.RESERVE", "t", "5"}), "OK\n");
  ASSERT_EQ(same({"TOPK.RESERVE", "t", "5"}), "(error) TopK: key already exists\n");
  settled_top(*nodes_["a"], "/top-k?namespace=t");  // every partition owned: lists are read whole
  std::mt19937_64 rng(7);
  int named = 0;  // replies that name an item pushed out
  for (int i = 0; i < 80; ++i) {
    std::vector<std::string> args{i % 3 == 2 ? "TOPK.INCRBY" : "TOPK.ADD", "t"};
    for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) {
      std::string item = "k";
      item += std::to_string(static_cast<int>(std::pow(std::uniform_real_distribution<double>(0, 1)(rng), 2) * 20));
      args.push_back(item);
      if (args[0] == "TOPK.INCRBY") args.push_back(std::to_string(1 + rng() % 4));
    }
    const std::string reply = same(args);
    named += reply.find('"') != std::string::npos ? 1 : 0;
  }
  EXPECT_GT(named, 0) << "the fixture never pushed an item out: the test would not see a wrong one";
  same({"TOPK.LIST", "t", "WITHCOUNT"});
  same({"TOPK.QUERY", "t", "k0", "k1", "k19", "none"});
  same({"TOPK.COUNT", "t", "k0", "k3", "k19", "none"});
  same({"TOPK.ADD", "t", ""});
  same({"TOPK.INCRBY", "t", "k1", "-1"});
  same({"TOPK.ADD", "missing", "a"});

  ASSERT_EQ(same({"CMS.INITBYDIM", "c", "200", "4"}), "OK\n");
  same({"CMS.INCRBY", "c", "x", "3", "y", "2", "x", "1"});
  same({"CMS.INCRBY", "c", "z", "0"});
  same({"CMS.INCRBY", "c", "x", "-1"});
  same({"CMS.QUERY", "c", "x", "y", "z"});
  same({"CMS.INFO", "c"});  // (count: the weight the partitions counted)
  same({"TOPK.ADD", "c", "a"});
  same({"DBSIZE"});
  same({"EXISTS", "t", "c", "none"});
  same({"TYPE", "c"});
  // CMS.MERGE: every partition sums its own part of the sources into its
  // part of the destination; the counts are a single node's.
  ASSERT_EQ(same({"CMS.INITBYDIM", "c2", "200", "4"}), "OK\n");
  same({"CMS.INCRBY", "c2", "x", "5", "w", "7"});
  ASSERT_EQ(same({"CMS.INITBYDIM", "m", "200", "4"}), "OK\n");
  same({"CMS.INCRBY", "m", "y", "1"});
  EXPECT_EQ(same({"CMS.MERGE", "m", "2", "c", "c2", "WEIGHTS", "2", "3"}), "OK\n");
  EXPECT_EQ(same({"CMS.QUERY", "m", "x", "y", "z", "w", "none"}), "1) (integer) 23\n2) (integer) 4\n3) (integer) 0\n4) (integer) 21\n5) (integer) 0\n");
  same({"CMS.INFO", "m"});
  EXPECT_EQ(same({"CMS.MERGE", "m", "2", "m", "c"}), "OK\n");  // the destination among its sources
  same({"CMS.QUERY", "m", "x", "y", "w"});
  same({"CMS.INCRBY", "m", "x", "1"});  // counting goes on after a merge
  same({"CMS.QUERY", "m", "x"});
  // Refusals, as a single node's: a missing source, a sum past 2^53 (the
  // sources' weight as every partition counted it), another shape, a top-K key.
  same({"CMS.MERGE", "m", "1", "none"});
  EXPECT_EQ(same({"CMS.MERGE", "m", "1", "c", "WEIGHTS", "4503599627370496"}), "(error) CMS: MERGE overflow\n");
  same({"CMS.INITBYDIM", "narrow", "100", "4"});
  same({"CMS.MERGE", "m", "1", "narrow"});
  same({"CMS.MERGE", "m", "1", "t"});
  same({"CMS.QUERY", "m", "x", "y", "w"});
  same({"DEL", "c"});
  same({"EXISTS", "c"});
  // A key made on one node is known on the other at once (its catalog catches up).
  ASSERT_EQ(testing::redis_cli(ports[0], {"TOPK.RESERVE", "fresh", "3"}), "OK\n");
  EXPECT_EQ(testing::redis_cli(ports[1], {"EXISTS", "fresh"}), "(integer) 1\n");
  ASSERT_EQ(testing::redis_cli(ports[0], {"TOPK.RESERVE", "fresher", "3"}), "OK\n");
  EXPECT_EQ(testing::redis_cli(ports[1], {"TOPK.ADD", "fresher", "a"}), "1) (nil)\n");

  // Pipelined: adds on one key counted as one batch; refusals alone.
  same({"TOPK.RESERVE", "two", "2"});
  same({"TOPK.ADD", "two", "a", "b"});
  const std::string pipeline = testing::resp_command({"TOPK.ADD", "two", "c"}) + testing::resp_command({"TOPK.INCRBY", "two", "c", "5"}) +
                               testing::resp_command({"TOPK.ADD", "two", "x", ""}) + testing::resp_command({"topk.add", "two", "e"}) +
                               testing::resp_command({"TOPK.ADD", "none", "z"}) + testing::resp_command({"TOPK.ADD", "two", "a"}) +
                               testing::resp_command({"TOPK.LIST", "two", "WITHCOUNT"});
  testing::RawConnection to_single(single.resp_port()), to_node(ports[1]);
  ASSERT_TRUE(to_single.send(pipeline));
  ASSERT_TRUE(to_node.send(pipeline));
  const std::string want = to_single.read_bytes(150, 2000);
  EXPECT_NE(want.find("$1\r\nb\r\n"), std::string::npos) << want;  // c pushed b out
  EXPECT_EQ(to_node.read_bytes(want.size()), want);

  // GET /namespaces/t: the stats are what the partitions counted.
  simdjson::dom::parser p1, p2;
  const auto mine = p1.parse(call(*nodes_["b"], "GET", "/namespaces/t").body);
  const auto theirs = p2.parse(call(single, "GET", "/namespaces/t").body);
  EXPECT_EQ(mine["stats"]["events"].get_uint64().value(), theirs["stats"]["events"].get_uint64().value());
  EXPECT_EQ(mine["stats"]["total_weight"].get_double().value(), theirs["stats"]["total_weight"].get_double().value());
  EXPECT_FALSE(mine["cluster"]["partial"].get_bool().value());
  EXPECT_EQ(single.stop(), 0);
  std::filesystem::remove_all(dir);

  // A node dies: until its partitions move (5 s), a list would leave their
  // keys out, so it is refused, never short; an add still counts (its reply
  // names nothing: the list cannot be read whole), and GET /namespaces says
  // which partitions its stats lack.
  ASSERT_EQ(nodes_["b"]->stop_hard(), 128 + SIGKILL);
  EXPECT_NE(testing::redis_cli(ports[0], {"TOPK.LIST", "t"}).find("did not answer in time"), std::string::npos);
  EXPECT_NE(testing::redis_cli(ports[0], {"TOPK.INFO", "t"}).find("did not answer in time"), std::string::npos);
  EXPECT_EQ(testing::redis_cli(ports[0], {"TOPK.INCRBY", "t", "k0", "1", "k19", "2"}), "1) (nil)\n2) (nil)\n");
  simdjson::dom::parser p3;
  const auto partial = p3.parse(call(*nodes_["a"], "GET", "/namespaces/t").body);
  EXPECT_TRUE(partial["cluster"]["partial"].get_bool().value());
  // Once a has taken them over, it answers whole again, the add counted once.
  const TopK whole = settled_top(*nodes_["a"], "/top-k?namespace=t");
  EXPECT_FALSE(whole.partial);
  EXPECT_EQ(whole.total, mine["stats"]["total_weight"].get_double().value() + 3);
}

}  // namespace
}  // namespace ebb

namespace ebb {
namespace {

// `n` events of an event-clock namespace over [from, from + seconds):
// Zipf-like keys from a fixed seed, in batches of 500.
void post_zipf(const EbbServer& node, const std::string& ns, std::uint64_t seed, int n, double from, double seconds) {
  std::mt19937_64 rng(seed);
  std::vector<double> cdf(2000);
  double acc = 0;
  for (std::size_t i = 0; i < cdf.size(); ++i) cdf[i] = acc += 1.0 / std::pow(i + 1.0, 1.1);
  std::uniform_real_distribution<double> u(0, 1);
  HttpClient c(node.port());
  for (int at = 0; at < n; at += 500) {
    std::string body = R"({"namespace":")" + ns + R"(","events":[)";
    for (int i = at; i < std::min(n, at + 500); ++i) {
      const auto k = std::lower_bound(cdf.begin(), cdf.end(), u(rng) * acc) - cdf.begin();
      body += std::string(i > at ? "," : "") + R"({"item_id":"k)" + std::to_string(k) + R"(","timestamp":)" +
              std::to_string(std::floor(from + seconds * i / n)) + "}";
    }
    const auto r = c.request("POST", "/events", body + "]}", "application/json");
    ASSERT_EQ(r.status, 204) << r.body;
  }
}

// audit_resize on a cluster: each partition audits its own items; a node's
// catalog adds their figures up and, where a view misses its SLA,
// publishes the PATCH of the width, which every partition applies at the
// same point of the log; a node restarted after a crash answers as before.
// While a node below protocol level 3 is live, a resize is refused.
TEST_F(Cluster, AuditResizeWidensEveryPartitionAtOnePointOfTheLog) {
  start({"a", "b"});
  const std::string spec =
      R"({"name":"narrow","windows":["all"],"sketch_width":16,"sketch_depth":2,"candidates":16,"k":10,"clock":"event",)"
      R"("audit_sample":0,"audit_top":10,"audit_sla":0.01,"max_event_age":null})";
  ASSERT_EQ(call(*nodes_["a"], "POST", "/namespaces", spec).status, 201);
  post_zipf(*nodes_["a"], "narrow", 1, 4000, 1.7e9, 600);
  settled_top(*nodes_["a"], "/top-k?namespace=narrow");
  // The partitions' passes take their top items in (10 each of 8), so the
  // next batches' noise is measured against them (a loaded machine may
  // take a while: a fixed sleep was not always enough).
  std::uint64_t tracked = 0;
  for (int i = 0; i < 300 && tracked < 80; ++i) {
    simdjson::dom::parser p;
    const auto audit = p.parse(call(*nodes_["a"], "GET", "/namespaces/narrow").body)["stats"]["audit"]["top_items"];
    tracked = audit.is_uint64() ? audit.get_uint64().value() : 0;
    if (tracked < 80) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(tracked, 80u) << call(*nodes_["a"], "GET", "/namespaces/narrow").body;
  post_zipf(*nodes_["b"], "narrow", 2, 4000, 1.7e9 + 600, 600);
  // Turned on once nothing is being written: a resize is a configuration
  // change, and a batch in flight across one is answered 503 (outcome
  // unknown), as across any PATCH on a cluster.
  bool missed = false;
  for (int i = 0; i < 150 && !missed; ++i) {
    simdjson::dom::parser p;
    const auto view = p.parse(call(*nodes_["a"], "GET", "/namespaces/narrow").body)["stats"]["views"].at(0)["audit"];
    missed = view["sla_met"].is_bool() && !view["sla_met"].get_bool().value();
    if (!missed) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(missed) << call(*nodes_["a"], "GET", "/namespaces/narrow").body;
  ASSERT_EQ(call(*nodes_["a"], "PATCH", "/namespaces/narrow", R"({"audit_resize":true})").status, 200);
  std::uint64_t width = 16;
  for (int i = 0; i < 150 && width == 16; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    simdjson::dom::parser p;
    width = p.parse(call(*nodes_["b"], "GET", "/namespaces/narrow").body)["sketch_width"].get_uint64().value();
  }
  ASSERT_GT(width, 16u) << nodes_["a"]->log() << nodes_["b"]->log();
  ASSERT_EQ(call(*nodes_["a"], "PATCH", "/namespaces/narrow", R"({"audit_resize":false})").status, 200);
  simdjson::dom::parser p;
  width = p.parse(call(*nodes_["a"], "GET", "/namespaces/narrow").body)["sketch_width"].get_uint64().value();
  const std::string logs = nodes_["a"]->log() + nodes_["b"]->log();
  EXPECT_NE(logs.find("namespace 'narrow': audit_resize widened its sketches (sketch_width 16 -> "), std::string::npos) << logs;
  // Counted on at the new width: the cluster's bound over its total (its
  // epsilon) lies between the new width's and the old one's, which every
  // partition would state had it not widened.
  post_zipf(*nodes_["a"], "narrow", 3, 2000, 1.7e9 + 1200, 60);
  const TopK before = settled_top(*nodes_["a"], "/top-k?namespace=narrow&k=10");
  const auto answer = p.parse(call(*nodes_["a"], "GET", "/top-k?namespace=narrow&k=10").body);
  const double epsilon = answer["accuracy"]["epsilon"].get_double().value();
  EXPECT_LT(epsilon, std::exp(1.0) / 16);
  EXPECT_GT(epsilon, std::exp(1.0) / static_cast<double>(width));

  // A crash and a restart: the partitions resume from their checkpoints
  // and the log (the PATCH among the records), and answer as before.
  nodes_["b"]->stop_hard();
  nodes_["b"] = node("b");
  const TopK after = settled_top(*nodes_["b"], "/top-k?namespace=narrow&k=10");
  EXPECT_EQ(after.total, before.total);
  ASSERT_EQ(after.items.size(), before.items.size());
  for (std::size_t i = 0; i < after.items.size(); ++i) {
    EXPECT_EQ(after.items[i].id, before.items[i].id);
    EXPECT_EQ(after.items[i].estimate, before.items[i].estimate);
    EXPECT_EQ(after.items[i].upper, before.items[i].upper);
  }

  // A node of level 2 (the audit, not resizing) is live: no resize.
  cluster::NatsClient client({nats_->url()}, "test");
  const cluster::KvPtr nodes = client.bucket("EBB_nodes", 1, std::chrono::milliseconds(5000));
  std::uint64_t rev = 0;
  ASSERT_EQ(kvStore_PutString(&rev, nodes.get(), "old", "v2"), NATS_OK);
  HttpResult refused;
  for (int i = 0; i < 50; ++i) {  // (the node reads the heartbeats every second)
    refused = call(*nodes_["a"], "PATCH", "/namespaces/narrow", R"({"sketch_width":)" + std::to_string(width * 2) + "}");
    if (refused.status != 200) break;
    width *= 2;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.body.find("cannot widen a namespace's sketches"), std::string::npos) << refused.body;
  const auto audit_refused = call(*nodes_["a"], "PATCH", "/namespaces/narrow", R"({"audit_resize":true})");
  EXPECT_EQ(audit_refused.status, 503);
  EXPECT_NE(audit_refused.body.find("run an older ebb, which cannot read audit_resize: nothing was changed; retry once every node runs this build"),
            std::string::npos)
      << audit_refused.body;
  EXPECT_EQ(call(*nodes_["a"], "PATCH", "/namespaces/narrow", R"({"k":5})").status, 200) << "the rest still changes";
  ASSERT_EQ(kvStore_Delete(nodes.get(), "old"), NATS_OK);
}

}  // namespace
}  // namespace ebb
