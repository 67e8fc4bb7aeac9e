// The NATS C client behind RAII handles (cluster/nats_client.hpp).
#include "ebb/cluster/nats_client.hpp"

#include <cstring>
#include <mutex>

namespace ebb::cluster {
namespace {

std::string describe(const std::string& what, natsStatus status, int js_code) {
  std::string out = what + ": " + natsStatus_GetText(status);
  if (const char* last = nats_GetLastError(nullptr); last && *last && std::strcmp(last, natsStatus_GetText(status)) != 0) out += std::string(" (") + last + ")";
  if (js_code != 0) out += " [JetStream error " + std::to_string(js_code) + "]";
  return out;
}

// JetStream's "stream name already in use" and "consumer name exists".
constexpr int kStreamExists = 10058;

}  // namespace

NatsError::NatsError(const std::string& what, natsStatus status, int js_code)
    : std::runtime_error(describe(what, status, js_code)), status_(status), js_code_(js_code) {}

void nats_check(natsStatus s, const std::string& what, jsErrCode js_code) {
  if (s != NATS_OK) throw NatsError(what, s, static_cast<int>(js_code));
}

AsyncSubscription::AsyncSubscription(natsConnection* nc, const std::string& subject, natsMsgHandler handler, void* closure) {
  nats_check(natsConnection_Subscribe(&sub_, nc, subject.c_str(), handler, closure), "subscribing to " + subject);
  const natsStatus s = natsSubscription_SetOnCompleteCB(sub_, &AsyncSubscription::on_complete, this);
  if (s != NATS_OK) {
    natsSubscription_Unsubscribe(sub_);
    natsSubscription_Destroy(sub_);
    nats_check(s, "watching " + subject);
  }
}

void AsyncSubscription::on_complete(void* closure) {
  auto* self = static_cast<AsyncSubscription*>(closure);
  {
    std::lock_guard lock(self->mu_);
    self->complete_ = true;
  }
  self->cv_.notify_all();
}

void AsyncSubscription::close() noexcept {
  if (!sub_) return;
  if (natsSubscription_Unsubscribe(sub_) == NATS_OK) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return complete_; });
  }
  natsSubscription_Destroy(sub_);
  sub_ = nullptr;
}

std::string_view msg_data(natsMsg* m) noexcept {
  const char* d = natsMsg_GetData(m);
  return d ? std::string_view(d, static_cast<std::size_t>(natsMsg_GetDataLength(m))) : std::string_view();
}

MsgMeta msg_meta(natsMsg* m) {
  jsMsgMetaData* meta = nullptr;
  nats_check(natsMsg_GetMetaData(&meta, m), "reading a JetStream message's metadata");
  MsgMeta out{meta->Sequence.Stream, meta->NumPending, meta->Timestamp};
  jsMsgMetaData_Destroy(meta);
  return out;
}

NatsClient::NatsClient(const std::vector<std::string>& urls, const std::string& name) {
  // The library's mutexes spin before they sleep (2,000 tries by default).
  // A node's many threads share one connection (every replica's readers,
  // the publishers, the queries), so they meet on its lock often; with
  // few cores the spinning burnt CPU the owner needed: no spin cut a
  // 1-node cluster's CPU an ingested event by about a fifth here (2 cores:
  // 3.0 -> 2.45 core-us, bench/cluster_bench.sh's split).
  static std::once_flag opened;
  std::call_once(opened, [] { nats_Open(0); });
  natsOptions* opts = nullptr;
  nats_check(natsOptions_Create(&opts), "creating NATS options");
  std::vector<const char*> servers;
  for (const auto& u : urls) servers.push_back(u.c_str());
  natsStatus s = natsOptions_SetServers(opts, servers.data(), static_cast<int>(servers.size()));
  if (s == NATS_OK) s = natsOptions_SetName(opts, name.c_str());
  // Ride out a server restart: reconnect for ever, buffering what is sent.
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 250);
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 5000);
  if (s == NATS_OK) s = natsConnection_Connect(&nc_, opts);
  natsOptions_Destroy(opts);
  std::string list;
  for (const auto& u : urls) list += (list.empty() ? "" : ",") + u;
  nats_check(s, "connecting to NATS at " + list);
  s = natsConnection_JetStream(&js_, nc_, nullptr);
  if (s != NATS_OK) {
    natsConnection_Destroy(nc_);
    nats_check(s, "opening JetStream");
  }
}

NatsClient::~NatsClient() {
  jsCtx_Destroy(js_);
  if (nc_) {
    natsConnection_Close(nc_);
    natsConnection_Destroy(nc_);
  }
}

bool NatsClient::connected() const noexcept { return natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED; }

NatsClient::StreamFacts NatsClient::ensure_stream(const std::string& name, const std::vector<std::string>& subjects, int replicas,
                                      const std::string& description) {
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  std::vector<const char*> subs;
  for (const auto& s : subjects) subs.push_back(s.c_str());
  cfg.Name = name.c_str();
  cfg.Subjects = subs.data();
  cfg.SubjectsLen = static_cast<int>(subs.size());
  cfg.Storage = js_FileStorage;
  cfg.Replicas = replicas;
  cfg.Description = description.c_str();
  cfg.AllowDirect = true;
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus s = js_AddStream(&info, js_, &cfg, nullptr, &code);
  if (s != NATS_OK && static_cast<int>(code) != kStreamExists) nats_check(s, "creating JetStream stream " + name, code);
  if (s != NATS_OK) {
    jsStreamInfo_Destroy(info);
    info = nullptr;
    nats_check(js_GetStreamInfo(&info, js_, name.c_str(), nullptr, &code), "reading JetStream stream " + name, code);
  }
  StreamFacts out;
  out.description = info->Config && info->Config->Description ? info->Config->Description : "";
  out.created_ns = info->Created;
  jsStreamInfo_Destroy(info);
  return out;
}

MsgPtr NatsClient::last_message(const std::string& stream, const std::string& subject, std::chrono::milliseconds wait) {
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = wait.count();
  natsMsg* m = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetLastMsg(&m, js_, stream.c_str(), subject.c_str(), &o, &code);
  if (s == NATS_NOT_FOUND) return nullptr;
  nats_check(s, "reading the newest message on " + subject, code);
  return MsgPtr(m);
}

std::uint64_t NatsClient::last_sequence(const std::string& stream, const std::string& subject, std::chrono::milliseconds wait) {
  const MsgPtr m = last_message(stream, subject, wait);
  return m ? natsMsg_GetSequence(m.get()) : 0;
}

std::uint64_t NatsClient::first_sequence(const std::string& stream) {
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  nats_check(js_GetStreamInfo(&info, js_, stream.c_str(), nullptr, &code), "reading JetStream stream " + stream, code);
  const std::uint64_t first = info->State.Msgs > 0 ? info->State.FirstSeq : info->State.LastSeq + 1;
  jsStreamInfo_Destroy(info);
  return first;
}

std::uint64_t NatsClient::first_sequence_since(const std::string& stream, const std::string& subjects, std::int64_t time_ns) {
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Config.DeliverPolicy = js_DeliverByStartTime;
  so.Config.OptStartTime = time_ns;
  so.Config.AckPolicy = js_AckNone;
  so.Config.InactiveThreshold = static_cast<std::int64_t>(consumer_idle_.count()) * 1000 * 1000;
  natsSubscription* sub = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  nats_check(js_PullSubscribe(&sub, js_, subjects.c_str(), nullptr, nullptr, &so, &code), "reading " + stream + " by time", code);
  SubscriptionPtr held(sub);
  const auto msgs = fetch(sub, 1, std::chrono::milliseconds(2000));
  if (!msgs.empty()) return msg_meta(msgs.front().get()).sequence;
  // Nothing came: nothing was stored since, or the server is slow. Only
  // the stream's last message, stored before `time_ns`, tells the first.
  jsStreamInfo* info = nullptr;
  nats_check(js_GetStreamInfo(&info, js_, stream.c_str(), nullptr, &code), "reading JetStream stream " + stream, code);
  const std::uint64_t last = info->State.LastSeq;
  jsStreamInfo_Destroy(info);
  const MsgPtr m = last > 0 ? message_at(stream, last, std::chrono::milliseconds(5000)) : nullptr;
  if (last > 0 && (!m || natsMsg_GetTime(m.get()) >= time_ns)) return 0;  // (unknown)
  return last + 1;
}

namespace {

void purge_stream(jsCtx* js, const std::string& stream, const std::string& subject, std::uint64_t keep, std::uint64_t below) {
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = 5000;
  if (!subject.empty()) o.Stream.Purge.Subject = subject.c_str();
  o.Stream.Purge.Keep = keep;
  o.Stream.Purge.Sequence = below;
  jsErrCode code = static_cast<jsErrCode>(0);
  nats_check(js_PurgeStream(js, stream.c_str(), &o, &code), "purging " + (subject.empty() ? std::string("every subject") : subject) + " of " + stream,
             code);
}

}  // namespace

void NatsClient::purge_all(const std::string& stream, const std::string& subject) { purge_stream(js_, stream, subject, 0, 0); }

void NatsClient::keep_newest(const std::string& stream, const std::string& subject, std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("keep_newest: keeping none is purge_all");
  purge_stream(js_, stream, subject, n, 0);
}

void NatsClient::drop_below(const std::string& stream, const std::string& subject, std::uint64_t below) {
  if (below == 0) throw std::invalid_argument("drop_below: sequence 0 would drop everything");
  purge_stream(js_, stream, subject, 0, below);
}

MsgPtr NatsClient::first_message(const std::string& stream, const std::string& subject, std::chrono::milliseconds wait) {
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = wait.count();
  jsDirectGetMsgOptions d;
  jsDirectGetMsgOptions_Init(&d);
  d.Sequence = 1;
  d.NextBySubject = subject.c_str();
  natsMsg* m = nullptr;
  const natsStatus s = js_DirectGetMsg(&m, js_, stream.c_str(), &o, &d);
  if (s == NATS_NOT_FOUND) return nullptr;
  nats_check(s, "reading the oldest message on " + subject);
  return MsgPtr(m);
}

MsgPtr NatsClient::message_at(const std::string& stream, std::uint64_t sequence, std::chrono::milliseconds wait) {
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = wait.count();
  natsMsg* m = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetMsg(&m, js_, stream.c_str(), sequence, &o, &code);
  if (s == NATS_NOT_FOUND) return nullptr;
  nats_check(s, "reading message " + std::to_string(sequence) + " of " + stream, code);
  return MsgPtr(m);
}

KvPtr NatsClient::bucket(const std::string& name, int replicas, std::chrono::milliseconds ttl, int history) {
  kvConfig cfg;
  kvConfig_Init(&cfg);
  cfg.Bucket = name.c_str();
  cfg.Replicas = replicas;
  cfg.TTL = ttl.count() * 1000 * 1000;  // nanoseconds
  cfg.History = static_cast<std::uint8_t>(history);
  cfg.StorageType = js_FileStorage;
  kvStore* kv = nullptr;
  natsStatus s = js_CreateKeyValue(&kv, js_, &cfg);
  if (s != NATS_OK) {
    const std::string created = describe("creating key-value bucket " + name, s, 0);
    s = js_KeyValue(&kv, js_, name.c_str());
    if (s != NATS_OK) throw NatsError(created + "; then opening it", s);
  }
  return KvPtr(kv);
}

SubscriptionPtr NatsClient::pull_from(const std::string& stream, const std::string& subject, std::uint64_t from) {
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Config.FilterSubject = subject.c_str();
  so.Config.DeliverPolicy = from <= 1 ? js_DeliverAll : js_DeliverByStartSequence;
  so.Config.OptStartSeq = from <= 1 ? 0 : from;
  so.Config.AckPolicy = js_AckNone;
  so.Config.InactiveThreshold = static_cast<std::int64_t>(consumer_idle_.count()) * 1000 * 1000;
  natsSubscription* sub = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  nats_check(js_PullSubscribe(&sub, js_, subject.c_str(), nullptr, nullptr, &so, &code), "subscribing to " + subject, code);
  return SubscriptionPtr(sub);
}

bool NatsClient::reader_stuck(const std::string& stream, const std::string& subject, std::uint64_t position,
                              std::chrono::steady_clock::time_point& last_data) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_data < kReaderSilence) return false;
  last_data = now;  // (asked again after another silence)
  try {
    return last_sequence(stream, subject, std::chrono::milliseconds(2000)) > position;
  } catch (const std::exception&) {
    return false;  // (NATS not answering at all: the reader's own errors say so)
  }
}

std::vector<MsgPtr> NatsClient::fetch(natsSubscription* sub, int batch, std::chrono::milliseconds wait) {
  natsMsgList list{nullptr, 0};
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = natsSubscription_Fetch(&list, sub, batch, wait.count(), &code);
  std::vector<MsgPtr> out;
  if (s == NATS_TIMEOUT) return out;
  nats_check(s, "fetching from JetStream", code);
  out.reserve(static_cast<std::size_t>(list.Count));
  for (int i = 0; i < list.Count; ++i) {
    out.emplace_back(list.Msgs[i]);
    list.Msgs[i] = nullptr;  // now ours
  }
  natsMsgList_Destroy(&list);
  return out;
}

std::uint64_t NatsClient::publish(const std::string& subject, std::string_view data, const std::string& msg_id, std::chrono::milliseconds wait,
                                  bool* duplicate) {
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = wait.count();
  if (!msg_id.empty()) po.MsgId = msg_id.c_str();
  jsPubAck* ack = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  nats_check(js_Publish(&ack, js_, subject.c_str(), data.data(), static_cast<int>(data.size()), &po, &code), "publishing to " + subject, code);
  const std::uint64_t seq = ack->Sequence;
  if (duplicate) *duplicate = ack->Duplicate;
  jsPubAck_Destroy(ack);
  return seq;
}

AsyncPublisher::AsyncPublisher(natsConnection* nc) {
  jsOptions o;
  jsOptions_Init(&o);
  o.PublishAsync.AckHandler = &AsyncPublisher::on_ack;
  o.PublishAsync.AckHandlerClosure = this;
  nats_check(natsConnection_JetStream(&js_, nc, &o), "opening JetStream for publishing");
}

AsyncPublisher::~AsyncPublisher() {
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = 1000;
  js_PublishAsyncComplete(js_, &po);  // late acknowledgements reach this object, not a freed one
  natsMsgList pending{nullptr, 0};
  if (js_PublishAsyncGetPendingList(&pending, js_) == NATS_OK) natsMsgList_Destroy(&pending);
  jsCtx_Destroy(js_);
}

void AsyncPublisher::on_ack(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
  auto* self = static_cast<AsyncPublisher*>(closure);
  const char* id = nullptr;
  if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) == NATS_OK && id) {
    std::lock_guard lock(self->mu_);
    for (std::size_t i = 0; i < self->ids_.size(); ++i) {
      if (self->ids_[i] != id) continue;
      if (pa) {
        self->sequences_[i] = pa->Sequence;
        if (pa->Duplicate) self->duplicates_ = true;
      } else if (pae) {
        self->errors_ += (self->errors_.empty() ? "" : "; ") + self->ids_[i] + ": " +
                         (pae->ErrText ? std::string(pae->ErrText) : std::string(natsStatus_GetText(pae->Err)));
      }
      break;
    }
  }
  natsMsg_Destroy(msg);  // ours to destroy (an acknowledgement of an earlier call's message is dropped here too)
}

std::vector<std::uint64_t> AsyncPublisher::publish_all(const std::vector<Outgoing>& msgs, std::chrono::milliseconds wait,
                                                       std::string& errors) {
  {
    std::lock_guard lock(mu_);
    ids_.clear();
    for (const auto& m : msgs) ids_.push_back(m.msg_id);
    sequences_.assign(msgs.size(), 0);
    errors_.clear();
    duplicates_ = false;
  }
  for (const auto& m : msgs) {
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, m.subject.c_str(), nullptr, m.data.data(), static_cast<int>(m.data.size()));
    if (s == NATS_OK) {
      jsPubOptions po;
      jsPubOptions_Init(&po);
      po.MsgId = m.msg_id.c_str();
      po.MaxWait = wait.count();
      s = js_PublishMsgAsync(js_, &msg, &po);  // takes the message on success
    }
    natsMsg_Destroy(msg);
    if (s != NATS_OK) {
      std::lock_guard lock(mu_);
      errors_ += (errors_.empty() ? "" : "; ") + m.msg_id + ": " + natsStatus_GetText(s);
    }
  }
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = wait.count();
  js_PublishAsyncComplete(js_, &po);
  // What is still unacknowledged is given back and dropped: the caller
  // retries it under the same id, and a late acknowledgement finds no id.
  natsMsgList pending{nullptr, 0};
  if (js_PublishAsyncGetPendingList(&pending, js_) == NATS_OK) natsMsgList_Destroy(&pending);
  std::lock_guard lock(mu_);
  errors = errors_;
  any_duplicate_ = duplicates_;
  ids_.clear();
  return sequences_;
}

}  // namespace ebb::cluster
