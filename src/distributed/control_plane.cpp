// The control plane: rendezvous, key-value store, barriers and heartbeats over TCP (Boost.Asio).
//
// Protocol. Length-prefixed binary frames, all integers big-endian:
//
//   frame   = u32 body_length, body        (1 <= body_length <= kMaxUnauthenticatedFrame before the peer
//                                           authenticated, kMaxFrame after)
//   body    = u8 type, u64 request_id, u16 n_ints, i64 ints[n_ints], u16 n_strs, str strs[n_strs]
//   str     = u32 length, bytes[length]
//
// Handshake, on every connection before any request (the job token itself never travels):
//   CHALLENGE (master -> client)  strs {"weir-control-plane/1", server_nonce}             sent on accept
//   AUTH      (client -> master)  ints {rank, world_size} strs {client_nonce, ClientProof(token, ...)}
//   AUTH_OK   (master -> client)  strs {MasterProof(token, ...)}: the client checks it before HELLO, so it
//                                 also knows it talks to the job's master
//   AUTH_REFUSED (master -> client) strs {reason}, then the master closes: the client stops retrying
// Nonces are 32 bytes from RAND_bytes, proofs HMAC-SHA256 (control_plane.hpp), compared with CRYPTO_memcmp.
// Until AUTH verifies, a connection costs the master little: frames of at most 4 KiB, a deadline
// (handshake_timeout, capped by rendezvous_timeout), at most kMaxPendingPerAddress such connections per
// remote address and kMaxPending in all (more are closed at once). Every body is buffered as its bytes
// arrive, never allocated from the announced length.
//
// Requests (client -> master, once authenticated); timeouts are in milliseconds:
//   HELLO     ints {rank, world_size, wait_ms, configured_timeout_ms}   answered once all ranks registered;
//                                                                        rank and world_size as in AUTH
//   SET       strs {key, value}
//   GET       ints {wait_ms}       strs {key}                            answered when the key exists
//   WAIT      ints {wait_ms}       strs {key...}                         answered when every key exists
//   ADD       ints {delta}         strs {key}                            OK carries the new value as text
//   BARRIER   ints {wait_ms}       strs {name}                           answered when every rank arrived
//   HEARTBEAT (request_id 0, no answer)
//   BYE       (request_id 0, no answer): a clean exit; the rank's closing connection is then not a loss
// Answers (master -> client):
//   OK        request_id, strs {payload} (GET: the value; ADD: the new counter; others: empty)
//   ERROR     request_id, strs {message}  (the complete "[control plane] ..." text the client throws)
//   LOST      request_id 0, ints {rank}, strs {message}: pushed to every rank when a rank is lost
//
// Master. One io_context on one thread owns all state (ranks, store, barriers, waiting requests), so there
// are no locks. A blocking request becomes a Waiter; a 20 ms tick answers waiters whose deadline passed and
// declares lost the ranks silent for longer than heartbeat_timeout (any frame counts as a heartbeat). When a
// rank is lost (its connection closes without BYE, or it goes silent) every waiter that is not already
// satisfied fails with "[control plane] rank R lost: <reason>", LOST goes to every other rank, and every later
// wait that cannot be answered at once fails the same way: nothing waits for a rank that cannot come.
//
// Client. Each client runs a dedicated io_context thread that reads answers, writes requests in order and
// sends the heartbeats. Callers block on a future with a deadline (the request's timeout plus a grace for
// the master's answer). Why not synchronous sockets: the heartbeats must keep flowing while a caller is
// blocked in a long Barrier, LOST notices must be seen while nobody is calling, and several threads may call
// at once; one reader thread that matches answers to request ids does all three without per-call sockets.
// The master enforces the timeouts (it knows who is missing, so it writes the error); the client's own
// deadline only catches a master that stopped answering.
// The client's handshake runs on the connecting thread before the io thread starts; a connection the master
// closes during it (a restart, its connection caps) is retried like a refused connect, a refusal is not.
#include "distributed/control_plane.hpp"

#include "common/wait_interrupter.hpp"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <utility>  // before Asio: Boost 1.74 awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <deque>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace weir::internal {
namespace {

namespace asio = boost::asio;
namespace wire = control_plane_wire;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using wire::Frame;
using wire::Type;

constexpr milliseconds kTick{20};                // the master's deadline and heartbeat resolution
constexpr milliseconds kAnswerGrace{2000};       // client: extra time for the master's answer
constexpr std::int64_t kMaxWaitMs = 365LL * 24 * 3600 * 1000;  // a year: deadlines cannot overflow
constexpr std::size_t kReadChunk = 64 << 10;     // bytes read at a time once authenticated
constexpr int kMaxPendingPerAddress = 16;        // connections not yet authenticated, per remote address
constexpr int kMaxPending = 256;                 // and in all
constexpr int kMaxLogLinesPerSecond = 10;        // refusals logged; a flood of them cannot flood stderr
constexpr std::string_view kProtocol = "weir-control-plane/1";

void PutU(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool KnownType(std::uint64_t t) {
  return (t >= static_cast<std::uint64_t>(Type::kHello) && t <= static_cast<std::uint64_t>(Type::kAuth)) ||
         (t >= static_cast<std::uint64_t>(Type::kOk) && t <= static_cast<std::uint64_t>(Type::kAuthRefused));
}

std::string Seconds(milliseconds ms) { return fmt::format("{} s", static_cast<double>(ms.count()) / 1000.0); }

std::string Lower(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

std::string RankList(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

/// How long a new connection has to complete the handshake, on either side.
milliseconds HandshakeTimeoutOf(const ControlPlaneOptions& options) {
  return std::min(options.handshake_timeout, options.rendezvous_timeout);
}

/// An error's message without its "[control plane] " prefix, to nest it in another message.
std::string Unprefixed(const std::string& message) {
  constexpr std::string_view kPrefix = "[control plane] ";
  return message.rfind(kPrefix, 0) == 0 ? message.substr(kPrefix.size()) : message;
}

bool IsLoopback(const asio::ip::address& a) {
  if (a.is_v4()) return a.to_v4().is_loopback();
  const auto v6 = a.to_v6();
  if (v6.is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, v6).is_loopback();
  return v6.is_loopback();
}

bool SameMac(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string Proof(std::string_view label, const std::string& token, std::string_view first_nonce,
                  std::string_view second_nonce, std::int64_t rank, std::int64_t world_size) {
  std::string message(label);
  message.push_back('\0');
  message.append(first_nonce);
  message.append(second_nonce);
  PutU(message, static_cast<std::uint64_t>(rank), 8);
  PutU(message, static_cast<std::uint64_t>(world_size), 8);
  static const unsigned char kNoKey = 0;  // an empty token: a valid pointer with length 0
  const auto* key = token.empty() ? &kNoKey : reinterpret_cast<const unsigned char*>(token.data());
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_length = 0;
  if (HMAC(EVP_sha256(), key, static_cast<int>(token.size()), reinterpret_cast<const unsigned char*>(message.data()),
           message.size(), mac, &mac_length) == nullptr ||
      mac_length != wire::kMacBytes)
    throw ControlPlaneError("[control plane] HMAC-SHA256 failed (OpenSSL)");
  return std::string(reinterpret_cast<const char*>(mac), mac_length);
}

}  // namespace

// ---------------------------------------------------------------------------------------------- wire

namespace control_plane_wire {

std::string Encode(const Frame& f) {
  std::string body;
  PutU(body, static_cast<std::uint8_t>(f.type), 1);
  PutU(body, f.id, 8);
  PutU(body, f.ints.size(), 2);
  for (auto v : f.ints) PutU(body, static_cast<std::uint64_t>(v), 8);
  PutU(body, f.strs.size(), 2);
  for (const auto& s : f.strs) {
    PutU(body, s.size(), 4);
    body += s;
  }
  std::string out;
  PutU(out, body.size(), 4);
  return out + body;
}

Frame DecodeBody(std::string_view body) {
  std::size_t pos = 0;
  auto fail = [&](const std::string& what) {
    throw ControlPlaneError(fmt::format("[control plane] malformed frame: {} (a body of {} bytes)", what, body.size()));
  };
  auto get = [&](std::size_t bytes, std::string_view what) {
    if (body.size() - pos < bytes) fail(fmt::format("it ends inside {}: {} of {} bytes", what, body.size() - pos, bytes));
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(body[pos++]);
    return v;
  };
  Frame f;
  const auto type = get(1, "the type");
  if (!KnownType(type)) fail(fmt::format("unknown type {}", type));
  f.type = static_cast<Type>(type);
  f.id = get(8, "the request id");
  // Counts are checked against the bytes left before anything is allocated for them.
  const auto n_ints = get(2, "the count of integers");
  if (n_ints * 8 > body.size() - pos)
    fail(fmt::format("{} integers need {} bytes, {} are left", n_ints, n_ints * 8, body.size() - pos));
  f.ints.reserve(n_ints);
  for (std::uint64_t i = 0; i < n_ints; ++i) f.ints.push_back(static_cast<std::int64_t>(get(8, "an integer")));
  const auto n_strs = get(2, "the count of strings");
  if (n_strs * 4 > body.size() - pos)
    fail(fmt::format("{} strings need at least {} bytes, {} are left", n_strs, n_strs * 4, body.size() - pos));
  f.strs.reserve(n_strs);
  for (std::uint64_t i = 0; i < n_strs; ++i) {
    const auto length = get(4, "a string's length");
    if (length > body.size() - pos)
      fail(fmt::format("string {} of {} announces {} bytes, {} are left", i + 1, n_strs, length, body.size() - pos));
    f.strs.emplace_back(body.substr(pos, length));
    pos += length;
  }
  if (pos != body.size()) fail(fmt::format("{} bytes follow the last string", body.size() - pos));
  return f;
}

std::size_t Decoder::Feed(std::string_view data) {
  if (has_frame_) throw ControlPlaneError("[control plane] Decoder::Feed called before TakeFrame took the last frame");
  std::size_t used = 0;
  if (header_bytes_ < sizeof header_) {
    while (header_bytes_ < sizeof header_ && used < data.size())
      header_[header_bytes_++] = static_cast<unsigned char>(data[used++]);
    if (header_bytes_ < sizeof header_) return used;
    length_ = (std::uint32_t{header_[0]} << 24) | (std::uint32_t{header_[1]} << 16) |
              (std::uint32_t{header_[2]} << 8) | header_[3];
    if (length_ == 0) throw ControlPlaneError("[control plane] malformed frame: an empty body");
    if (length_ > max_body_)
      throw ControlPlaneError(fmt::format("[control plane] malformed frame: a body of {} bytes announced, at most {} "
                                          "allowed", length_, max_body_));
  }
  const std::size_t take = std::min(data.size() - used, std::size_t{length_} - body_.size());
  if (body_.size() + take > body_.capacity())  // grow with what arrived, never past the announced length
    body_.reserve(std::min<std::size_t>(length_, std::max(2 * body_.capacity(), body_.size() + take)));
  body_.insert(body_.end(), data.begin() + static_cast<std::ptrdiff_t>(used),
               data.begin() + static_cast<std::ptrdiff_t>(used + take));
  used += take;
  if (body_.size() == length_) {
    header_bytes_ = 0;
    frame_ = DecodeBody(std::string_view(body_.data(), body_.size()));
    has_frame_ = true;
    body_.clear();
    if (body_.capacity() > kReadChunk) std::vector<char>().swap(body_);  // a large frame's memory goes back
  }
  return used;
}

Frame Decoder::TakeFrame() {
  if (!has_frame_) throw ControlPlaneError("[control plane] Decoder::TakeFrame called without a complete frame");
  has_frame_ = false;
  return std::move(frame_);
}

std::string ClientProof(const std::string& token, std::string_view server_nonce, std::string_view client_nonce,
                        std::int64_t rank, std::int64_t world_size) {
  return Proof("weir control plane v1: rank", token, server_nonce, client_nonce, rank, world_size);
}

std::string MasterProof(const std::string& token, std::string_view server_nonce, std::string_view client_nonce,
                        std::int64_t rank, std::int64_t world_size) {
  return Proof("weir control plane v1: master", token, client_nonce, server_nonce, rank, world_size);
}

std::string RandomNonce() {
  std::string nonce(kNonceBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), static_cast<int>(nonce.size())) != 1)
    throw ControlPlaneError("[control plane] OpenSSL's RAND_bytes could not make a nonce");
  return nonce;
}

}  // namespace control_plane_wire

bool IsLoopbackAddress(const std::string& address) {
  boost::system::error_code ec;
  const auto parsed = asio::ip::make_address(address, ec);
  if (!ec) return IsLoopback(parsed);
  asio::io_context io;
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(address, "", ec);
  if (ec || results.empty()) return false;
  return std::all_of(results.begin(), results.end(), [](const auto& r) { return IsLoopback(r.endpoint().address()); });
}

void ValidateControlPlaneOptions(const ControlPlaneOptions& o, bool for_server) {
  auto fail = [](const std::string& field, const std::string& expected, const std::string& got) {
    throw std::invalid_argument(
        fmt::format("[control plane] invalid option {}: expected {}, got {}", field, expected, got));
  };
  if (o.master_addr.empty()) fail("master_addr", "a host name or address", "an empty string");
  const int min_port = for_server ? 0 : 1;
  if (o.master_port < min_port || o.master_port > 65535)
    fail("master_port", fmt::format("{} <= master_port <= 65535", min_port), std::to_string(o.master_port));
  if (o.world_size < 1) fail("world_size", "world_size >= 1", std::to_string(o.world_size));
  if (o.rank < 0 || o.rank >= o.world_size)
    fail("rank", fmt::format("0 <= rank < world_size={}", o.world_size), std::to_string(o.rank));
  const milliseconds year = std::chrono::hours(24 * 365);  // deadlines computed from these cannot overflow
  if (o.rendezvous_timeout.count() <= 0 || o.rendezvous_timeout > year)
    fail("rendezvous_timeout", "a positive duration of at most a year",
         fmt::format("{} ms", o.rendezvous_timeout.count()));
  if (o.heartbeat_interval.count() <= 0 || o.heartbeat_interval > year)
    fail("heartbeat_interval", "a positive duration of at most a year",
         fmt::format("{} ms", o.heartbeat_interval.count()));
  if (o.heartbeat_timeout <= o.heartbeat_interval || o.heartbeat_timeout > year)
    fail("heartbeat_timeout",
         fmt::format("more than heartbeat_interval={} ms and at most a year", o.heartbeat_interval.count()),
         fmt::format("{} ms", o.heartbeat_timeout.count()));
  if (o.handshake_timeout.count() <= 0 || o.handshake_timeout > year)
    fail("handshake_timeout", "a positive duration of at most a year",
         fmt::format("{} ms", o.handshake_timeout.count()));
  // Without a token anyone who reaches the port could join; on a loopback address only this machine can.
  if (o.job_token.empty() && !IsLoopbackAddress(o.master_addr))
    throw std::invalid_argument(fmt::format(
        "[control plane] no job token, and master_addr {} is not a loopback address: set WEIR_JOB_TOKEN to the same "
        "secret on every machine of the job (for example the output of `python3 -c \"import secrets; "
        "print(secrets.token_hex(32))\"`), or DistributedOptions::job_token",
        o.master_addr));
}

// ---------------------------------------------------------------------------------------------- master

struct ControlPlaneServer::Impl {
  struct Conn {
    explicit Conn(asio::io_context& io) : socket(io), handshake_timer(io) {}
    tcp::socket socket;
    asio::steady_timer handshake_timer;
    std::string remote;          // "address:port", for messages
    std::string remote_address;  // the key of the per-address cap
    bool pending = false;        // counted in the caps of connections not yet authenticated
    bool authenticated = false;
    bool refusing = false;       // closes once its refusal is written
    std::string nonce;           // the challenge's
    std::int64_t auth_rank = -1;
    std::int64_t auth_world = -1;
    wire::Decoder decoder{wire::kMaxUnauthenticatedFrame};
    std::vector<char> read_buffer;
    std::deque<std::string> out;
    bool writing = false;
    bool closed = false;
    int rank = -1;
  };
  using ConnPtr = std::shared_ptr<Conn>;

  struct RankState {
    ConnPtr conn;
    Clock::time_point last_seen;
    bool departed = false;  // said BYE
  };

  struct Waiter {
    ConnPtr conn;
    std::uint64_t id;
    Type type;
    int rank;
    std::vector<std::string> keys;  // GET/WAIT: the keys; BARRIER: the name
    milliseconds timeout;           // as shown in messages
    Clock::time_point deadline;
  };

  ControlPlaneOptions options;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer tick{io};
  std::thread thread;
  int port = 0;

  // Owned by the io thread from here on.
  std::set<ConnPtr> conns;
  std::map<int, RankState> ranks;
  std::map<std::string, std::string> store;
  std::map<std::string, std::set<int>> barriers;
  std::list<Waiter> waiters;
  std::string lost_message;  // the first loss; non-empty = the job is broken
  std::map<std::string, int> pending_per_address;
  int pending_total = 0;
  Clock::time_point log_window;
  int log_lines = 0;
  int log_suppressed = 0;

  std::string Where() const { return fmt::format("{}:{}", options.master_addr, port); }
  milliseconds HandshakeTimeout() const { return HandshakeTimeoutOf(options); }

  /// One line on stderr, at most kMaxLogLinesPerSecond a second (the rest are counted, then reported).
  void Log(const std::string& line) {
    const auto now = Clock::now();
    if (now - log_window >= std::chrono::seconds(1)) {
      if (log_suppressed > 0)
        std::fprintf(stderr, "[control plane] master %s: %d more such lines not shown\n", Where().c_str(), log_suppressed);
      log_window = now;
      log_lines = 0;
      log_suppressed = 0;
    }
    if (log_lines >= kMaxLogLinesPerSecond) {
      ++log_suppressed;
      return;
    }
    ++log_lines;
    std::fprintf(stderr, "%s\n", line.c_str());
  }

  void Start() {
    boost::system::error_code ec;
    auto fail = [&](const boost::system::error_code& e) {
      throw ControlPlaneError(fmt::format("[control plane] cannot listen on {}:{}: {}", options.master_addr,
                                          options.master_port, Lower(e.message())));
    };
    auto address = asio::ip::make_address(options.master_addr, ec);
    if (ec) {
      tcp::resolver resolver(io);
      auto results = resolver.resolve(options.master_addr, std::to_string(options.master_port), ec);
      if (ec || results.empty()) fail(ec);
      address = results.begin()->endpoint().address();
    }
    tcp::endpoint endpoint(address, static_cast<unsigned short>(options.master_port));
    acceptor.open(endpoint.protocol(), ec);
    if (ec) fail(ec);
    acceptor.set_option(tcp::acceptor::reuse_address(true), ec);  // a restarted master may reuse TIME_WAIT
    acceptor.bind(endpoint, ec);
    if (ec) fail(ec);
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) fail(ec);
    port = acceptor.local_endpoint().port();
    Accept();
    Tick();
    thread = std::thread([this] { io.run(); });
  }

  void Stop() {
    if (!thread.joinable()) return;
    asio::post(io, [this] {
      boost::system::error_code ec;
      acceptor.close(ec);
      tick.cancel();
      for (const auto& c : conns) c->socket.close(ec);
      io.stop();
    });
    thread.join();
  }

  void Accept() {
    auto conn = std::make_shared<Conn>(io);
    acceptor.async_accept(conn->socket, [this, conn](const boost::system::error_code& ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) Admit(conn);
      Accept();
    });
  }

  /// Challenges a new connection, unless too many are already authenticating (then closes it at once).
  void Admit(const ConnPtr& c) {
    boost::system::error_code ec;
    const auto remote = c->socket.remote_endpoint(ec);
    if (ec) {
      c->socket.close(ec);
      return;
    }
    c->remote_address = remote.address().to_string();
    c->remote = fmt::format("{}:{}", c->remote_address, remote.port());
    const int from_there = pending_per_address.count(c->remote_address) ? pending_per_address[c->remote_address] : 0;
    if (from_there >= kMaxPendingPerAddress || pending_total >= kMaxPending) {
      Log(fmt::format("[control plane] master {} closed a connection from {} at once: {} connections from that "
                      "address and {} in all are authenticating (at most {} and {})", Where(), c->remote, from_there,
                      pending_total, kMaxPendingPerAddress, kMaxPending));
      c->socket.close(ec);
      return;
    }
    ++pending_per_address[c->remote_address];
    ++pending_total;
    c->pending = true;
    conns.insert(c);
    c->socket.set_option(tcp::no_delay(true), ec);
    try {
      c->nonce = wire::RandomNonce();
    } catch (const ControlPlaneError& e) {
      Log(fmt::format("[control plane] master {} closed a connection from {}: {}", Where(), c->remote,
                      Unprefixed(e.what())));
      return Close(c);
    }
    Send(c, Frame{Type::kChallenge, 0, {}, {std::string(kProtocol), c->nonce}});
    c->handshake_timer.expires_after(HandshakeTimeout());
    c->handshake_timer.async_wait([this, c](const boost::system::error_code& timer_ec) {
      if (timer_ec || c->closed || c->authenticated) return;
      Log(fmt::format("[control plane] master {} closed a connection from {}: no handshake within {}", Where(),
                      c->remote, Seconds(HandshakeTimeout())));
      Close(c);
    });
    Read(c);
  }

  /// Reads what has arrived (a few KiB at most before authentication) and handles each complete frame.
  void Read(const ConnPtr& c) {
    c->read_buffer.resize(c->authenticated ? kReadChunk : wire::kMaxUnauthenticatedFrame);
    c->socket.async_read_some(asio::buffer(c->read_buffer), [this, c](const boost::system::error_code& ec,
                                                                      std::size_t n) {
      if (ec || c->closed) return Close(c);
      std::string_view data(c->read_buffer.data(), n);
      try {
        while (!data.empty() && !c->closed && !c->refusing) {
          data.remove_prefix(c->decoder.Feed(data));
          if (c->decoder.HasFrame()) Handle(c, c->decoder.TakeFrame());
        }
      } catch (const ControlPlaneError& e) {
        Log(fmt::format("[control plane] master {} closed the connection from {}{}: {}", Where(), c->remote,
                        c->authenticated ? fmt::format(" (rank {})", c->auth_rank) : " before it authenticated",
                        Unprefixed(e.what())));
        return Close(c);
      }
      if (!c->closed && !c->refusing) Read(c);
    });
  }

  /// Checks the AUTH frame, the only frame a connection may send first; refuses a wrong token.
  void Authenticate(const ConnPtr& c, const Frame& f) {
    if (f.type != Type::kAuth || f.ints.size() != 2 || f.strs.size() != 2 || f.strs[0].size() != wire::kNonceBytes) {
      Log(fmt::format("[control plane] master {} closed the connection from {} before it authenticated: expected an "
                      "AUTH frame (type {}) with 2 integers and a {}-byte nonce, got type {} with {} integers and {} "
                      "strings", Where(), c->remote, static_cast<int>(Type::kAuth), wire::kNonceBytes,
                      static_cast<int>(f.type), f.ints.size(), f.strs.size()));
      return Close(c);
    }
    const auto expected = wire::ClientProof(options.job_token, c->nonce, f.strs[0], f.ints[0], f.ints[1]);
    if (!SameMac(f.strs[1], expected)) {
      Log(fmt::format("[control plane] master {} refused a connection from {} claiming rank {}: the job token did not "
                      "match", Where(), c->remote, f.ints[0]));
      c->refusing = true;
      return Send(c, Frame{Type::kAuthRefused, 0, {}, {"the job token did not match"}});
    }
    c->authenticated = true;
    Unpend(c);
    c->handshake_timer.cancel();
    c->auth_rank = f.ints[0];
    c->auth_world = f.ints[1];
    c->decoder.SetMaxBody(wire::kMaxFrame);
    Send(c, Frame{Type::kAuthOk, 0, {}, {wire::MasterProof(options.job_token, c->nonce, f.strs[0], f.ints[0],
                                                             f.ints[1])}});
  }

  void Unpend(const ConnPtr& c) {
    if (!c->pending) return;
    c->pending = false;
    --pending_total;
    if (--pending_per_address[c->remote_address] == 0) pending_per_address.erase(c->remote_address);
  }

  void Send(const ConnPtr& c, const Frame& f) {
    if (c->closed) return;
    c->out.push_back(wire::Encode(f));
    if (!c->writing) Write(c);
  }

  void Write(const ConnPtr& c) {
    c->writing = true;
    auto done = [this, c](const boost::system::error_code& ec, std::size_t) {
      c->writing = false;
      if (ec) return Close(c);
      c->out.pop_front();
      if (!c->out.empty()) return Write(c);
      if (c->refusing) Close(c);
    };
    asio::async_write(c->socket, asio::buffer(c->out.front()), done);
  }

  void Ok(const ConnPtr& c, std::uint64_t id, std::string payload = {}) {
    Send(c, Frame{Type::kOk, id, {}, {std::move(payload)}});
  }
  void Error(const ConnPtr& c, std::uint64_t id, std::string message) {
    Send(c, Frame{Type::kError, id, {}, {std::move(message)}});
  }

  void Close(const ConnPtr& c) {
    if (c->closed) return;
    c->closed = true;
    boost::system::error_code ignored;
    c->socket.close(ignored);
    c->handshake_timer.cancel();
    Unpend(c);
    conns.erase(c);
    waiters.remove_if([&](const Waiter& w) { return w.conn == c; });
    if (c->rank >= 0) {
      auto it = ranks.find(c->rank);
      if (it != ranks.end() && it->second.conn == c && !it->second.departed) Lose(c->rank, "connection closed");
    }
  }

  void Lose(int rank, const std::string& reason) {
    ranks[rank].departed = true;  // reported once
    const std::string message = fmt::format("[control plane] rank {} lost: {}", rank, reason);
    if (lost_message.empty()) lost_message = message;
    for (const auto& c : conns)
      if (c->authenticated && c->rank != rank) Send(c, Frame{Type::kLost, 0, {rank}, {message}});
    // Fail every wait now, with this loss (not only the first one) in the message.
    for (auto it = waiters.begin(); it != waiters.end();) {
      if (it->type == Type::kBarrier) barriers[it->keys[0]].erase(it->rank);
      Error(it->conn, it->id, fmt::format("{} (rank {} was waiting in {})", message, it->rank, Describe(*it)));
      it = waiters.erase(it);
    }
    if (auto c = ranks[rank].conn) {
      boost::system::error_code ignored;
      c->socket.close(ignored);  // a silent rank learns it was dropped; Close() runs from its read handler
    }
  }

  static std::string Describe(const Waiter& w) {
    switch (w.type) {
      case Type::kHello: return "the rendezvous";
      case Type::kGet: return fmt::format("Get({})", Quoted(w.keys[0]));
      case Type::kWait: return fmt::format("Wait of {} keys", w.keys.size());
      default: return fmt::format("Barrier({})", Quoted(w.keys[0]));
    }
  }

  /// Whether the waiter can be answered now; fills `payload` for GET.
  bool Satisfied(const Waiter& w, std::string& payload) const {
    switch (w.type) {
      case Type::kHello: return static_cast<int>(ranks.size()) == options.world_size;
      case Type::kGet: {
        auto it = store.find(w.keys[0]);
        if (it == store.end()) return false;
        payload = it->second;
        return true;
      }
      case Type::kWait:
        return std::all_of(w.keys.begin(), w.keys.end(), [&](const auto& k) { return store.count(k) > 0; });
      default: return false;  // barriers complete in Handle(), when the last rank arrives
    }
  }

  std::string TimeoutMessage(const Waiter& w) {
    switch (w.type) {
      case Type::kHello: {
        std::vector<int> missing;
        for (int r = 0; r < options.world_size; ++r)
          if (!ranks.count(r)) missing.push_back(r);
        return fmt::format("[control plane] waiting for {} of {} ranks at {} for {}: {} never connected",
                           missing.size(), options.world_size, Where(), Seconds(w.timeout), RankList(missing));
      }
      case Type::kGet:
        return fmt::format("[control plane] rank {}: Get({}) timed out after {}: the key was never set", w.rank,
                           Quoted(w.keys[0]), Seconds(w.timeout));
      case Type::kWait: {
        std::string missing;
        for (const auto& k : w.keys)
          if (!store.count(k)) missing += (missing.empty() ? "" : ", ") + Quoted(k);
        return fmt::format("[control plane] rank {}: Wait timed out after {}: keys never set: {}", w.rank,
                           Seconds(w.timeout), missing);
      }
      default: {
        const auto& arrived = barriers[w.keys[0]];
        std::vector<int> missing;
        for (int r = 0; r < options.world_size; ++r)
          if (!arrived.count(r)) missing.push_back(r);
        return fmt::format("[control plane] rank {}: Barrier({}) timed out after {}: {} did not arrive", w.rank,
                           Quoted(w.keys[0]), Seconds(w.timeout), RankList(missing));
      }
    }
  }

  /// Answers every waiter that can be answered: satisfied, broken by a loss, or past its deadline.
  void Progress() {
    const auto now = Clock::now();
    for (auto it = waiters.begin(); it != waiters.end();) {
      std::string payload;
      if (Satisfied(*it, payload)) {
        Ok(it->conn, it->id, std::move(payload));
      } else if (!lost_message.empty()) {
        if (it->type == Type::kBarrier) barriers[it->keys[0]].erase(it->rank);
        Error(it->conn, it->id, fmt::format("{} (rank {} was waiting in {})", lost_message, it->rank, Describe(*it)));
      } else if (now >= it->deadline) {
        Error(it->conn, it->id, TimeoutMessage(*it));
        if (it->type == Type::kBarrier) barriers[it->keys[0]].erase(it->rank);  // it gave up
      } else {
        ++it;
        continue;
      }
      it = waiters.erase(it);
    }
  }

  void Tick() {
    tick.expires_after(kTick);
    tick.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      const auto now = Clock::now();
      std::vector<int> silent;
      for (auto& [rank, state] : ranks)
        if (!state.departed && now - state.last_seen > options.heartbeat_timeout) silent.push_back(rank);
      for (int rank : silent) Lose(rank, fmt::format("no heartbeat for {}", Seconds(options.heartbeat_timeout)));
      Progress();
      Tick();
    });
  }

  void AddWaiter(const ConnPtr& c, const Frame& f, std::vector<std::string> keys, std::int64_t wait_ms,
                 std::int64_t shown_ms) {
    waiters.push_back(Waiter{c, f.id, f.type, c->rank, std::move(keys), milliseconds(shown_ms),
                             Clock::now() + milliseconds(std::clamp<std::int64_t>(wait_ms, 0, kMaxWaitMs))});
  }

  void Handle(const ConnPtr& c, const Frame& f) {
    if (!c->authenticated) return Authenticate(c, f);
    if (c->rank >= 0) ranks[c->rank].last_seen = Clock::now();
    auto bad = [&] {
      Error(c, f.id, "[control plane] malformed request");
      Close(c);
    };
    if (f.type == Type::kHello) {
      // The rank and world size were bound to the token's proof: HELLO cannot change them.
      if (f.ints.size() != 4 || f.ints[0] != c->auth_rank || f.ints[1] != c->auth_world) return bad();
      return Hello(c, f);
    }
    if (c->rank < 0) {
      if (f.type != Type::kBye && f.type != Type::kHeartbeat)
        Error(c, f.id, "[control plane] request before the rank registered");
      return;
    }
    switch (f.type) {
      case Type::kHeartbeat: return;
      case Type::kBye: ranks[c->rank].departed = true; return;
      case Type::kSet:
        if (f.strs.size() != 2) return bad();
        store[f.strs[0]] = f.strs[1];
        Ok(c, f.id);
        return Progress();
      case Type::kAdd: {
        if (f.strs.size() != 1 || f.ints.size() != 1) return bad();
        std::int64_t value = 0;
        auto it = store.find(f.strs[0]);
        if (it != store.end()) {
          const auto& s = it->second;
          auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), value);
          if (err != std::errc() || end != s.data() + s.size())
            return Error(c, f.id, fmt::format("[control plane] rank {}: Add({}): the key holds a value that is not "
                                              "a counter ({} bytes)", c->rank, Quoted(f.strs[0]), s.size()));
        }
        value += f.ints[0];
        store[f.strs[0]] = std::to_string(value);
        Ok(c, f.id, std::to_string(value));
        return Progress();
      }
      case Type::kGet:
      case Type::kWait:
        if (f.ints.size() != 1 || (f.type == Type::kGet && f.strs.size() != 1)) return bad();
        AddWaiter(c, f, f.strs, f.ints[0], f.ints[0]);
        return Progress();
      case Type::kBarrier: {
        if (f.ints.size() != 1 || f.strs.size() != 1) return bad();
        auto& arrived = barriers[f.strs[0]];
        if (arrived.count(c->rank))
          return Error(c, f.id, fmt::format("[control plane] rank {} entered Barrier({}) twice", c->rank,
                                            Quoted(f.strs[0])));
        arrived.insert(c->rank);
        AddWaiter(c, f, f.strs, f.ints[0], f.ints[0]);
        if (lost_message.empty() && static_cast<int>(arrived.size()) == options.world_size) {
          for (auto it = waiters.begin(); it != waiters.end();) {
            if (it->type == Type::kBarrier && it->keys[0] == f.strs[0]) {
              Ok(it->conn, it->id);
              it = waiters.erase(it);
            } else {
              ++it;
            }
          }
          barriers.erase(f.strs[0]);
        }
        return Progress();
      }
      default: return bad();
    }
  }

  void Hello(const ConnPtr& c, const Frame& f) {
    const auto rank = f.ints[0];
    const auto world = f.ints[1];
    if (c->rank >= 0) return Error(c, f.id, fmt::format("[control plane] rank {} said hello twice", c->rank));
    if (world != options.world_size)
      return Error(c, f.id, fmt::format("[control plane] world size mismatch: rank {} has world_size={}, the master "
                                        "at {} has world_size={}", rank, world, Where(), options.world_size));
    if (rank < 0 || rank >= options.world_size)
      return Error(c, f.id, fmt::format("[control plane] rank {} is out of range: world_size={} allows ranks 0 to {}",
                                        rank, options.world_size, options.world_size - 1));
    if (auto it = ranks.find(static_cast<int>(rank)); it != ranks.end()) {
      std::string from = "an earlier connection";
      if (it->second.conn && !it->second.conn->closed) from = it->second.conn->remote;
      return Error(c, f.id, fmt::format("[control plane] rank {} registered twice: rank {} already registered from {}",
                                        rank, rank, from));
    }
    c->rank = static_cast<int>(rank);
    ranks[c->rank] = RankState{c, Clock::now(), false};
    AddWaiter(c, f, {}, f.ints[2], f.ints[3]);
    Progress();
  }
};

ControlPlaneServer::ControlPlaneServer(const ControlPlaneOptions& options) : impl_(std::make_unique<Impl>()) {
  ValidateControlPlaneOptions(options, /*for_server=*/true);
  impl_->options = options;
  impl_->Start();
}

ControlPlaneServer::~ControlPlaneServer() { impl_->Stop(); }

int ControlPlaneServer::Port() const { return impl_->port; }

// ---------------------------------------------------------------------------------------------- client

struct ControlPlaneClient::Impl {
  struct Reply {
    bool ok = false;
    std::string payload;
  };
  using Promise = std::promise<Reply>;

  explicit Impl(ControlPlaneOptions o) : options(std::move(o)) {}
  ~Impl() { Shutdown(); }

  ControlPlaneOptions options;
  asio::io_context io;
  tcp::socket socket{io};
  asio::steady_timer heartbeat{io};
  std::thread thread;
  std::atomic<bool> io_done{false};
  std::atomic<bool> heartbeats_paused{false};

  mutable std::mutex mu;  // guards the fields below
  std::map<std::uint64_t, std::shared_ptr<Promise>> pending;
  std::uint64_t next_id = 1;
  std::vector<int> lost;
  std::string closed_message;  // non-empty once the connection to the master is gone

  // The connecting thread during the handshake, then the io thread only.
  wire::Decoder decoder{wire::kMaxUnauthenticatedFrame};
  std::vector<char> read_buffer = std::vector<char>(kReadChunk);
  std::string leftover;  // bytes read during the handshake after its last frame
  std::deque<std::string> out;
  bool writing = false;
  bool closing = false;
  std::shared_ptr<std::promise<void>> closed_promise;

  // The master is rank 0's process: a stalled or lost master is rank 0 stalled or lost.
  std::string Where() const { return fmt::format("{}:{} (rank 0)", options.master_addr, options.master_port); }

  void ConnectSocket(Clock::time_point deadline) {
    boost::system::error_code ec;
    tcp::resolver resolver(io);
    auto endpoints = resolver.resolve(options.master_addr, std::to_string(options.master_port), ec);
    if (ec)
      throw ControlPlaneError(fmt::format("[control plane] rank {}: cannot resolve the master address {}: {}",
                                          options.rank, options.master_addr, Lower(ec.message())));
    std::string last_error = "no attempt";
    milliseconds pause{50};
    for (;;) {
      const auto now = Clock::now();
      if (now >= deadline) break;
      bool done = false;
      boost::system::error_code result;
      asio::async_connect(socket, endpoints, [&](const boost::system::error_code& e, const tcp::endpoint&) {
        done = true;
        result = e;
      });
      if (!RunUntil(done, deadline)) {  // the deadline passed during the attempt
        last_error = "connection timed out";
        break;
      }
      if (!result) {
        socket.set_option(tcp::no_delay(true), ec);
        return;
      }
      last_error = Lower(result.message());
      socket.close(ec);
      std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - Clock::now()));
      PollWaitInterrupter();
      pause = std::min(pause * 2, milliseconds(500));
    }
    throw ControlPlaneError(fmt::format("[control plane] rank {}: the master {} did not answer within {}: {}",
                                        options.rank, Where(), Seconds(options.rendezvous_timeout), last_error));
  }

  milliseconds HandshakeTimeout() const { return HandshakeTimeoutOf(options); }

  /// Connects and authenticates, retrying until `deadline` while the master is not there or closes the
  /// connection during the handshake (a restart, its caps); throws at once when the tokens differ.
  void ConnectAndAuthenticate(Clock::time_point deadline) {
    milliseconds pause{50};
    for (;;) {
      ConnectSocket(deadline);
      const std::string error = Handshake(std::min(deadline, Clock::now() + HandshakeTimeout()));
      if (error.empty()) return;
      boost::system::error_code ec;
      socket.close(ec);
      if (Clock::now() + pause >= deadline)
        throw ControlPlaneError(fmt::format("[control plane] rank {}: the master {} did not answer within {}: {}",
                                            options.rank, Where(), Seconds(options.rendezvous_timeout), error));
      std::this_thread::sleep_for(pause);
      PollWaitInterrupter();
      pause = std::min(pause * 2, milliseconds(500));
    }
  }

  /// Runs the io_context until `done` or `deadline`, in slices between which the wait interrupter may
  /// throw (Ctrl-C during the rendezvous); then the operation is cancelled and the exception goes on.
  void RunSliced(const bool& done, Clock::time_point deadline) {
    io.restart();
    for (auto now = Clock::now(); !done && now < deadline; now = Clock::now()) {
      io.run_for(std::min<Clock::duration>(kInterruptPoll, deadline - now));
      if (done) return;
      try {
        PollWaitInterrupter();
      } catch (...) {
        CancelPending();
        throw;
      }
      io.restart();
    }
  }

  /// Closes the socket, which cancels the operation in progress, and runs its handler.
  void CancelPending() {
    boost::system::error_code ec;
    socket.close(ec);
    io.restart();
    io.run();
  }

  /// Runs the io_context until `done` or `deadline`; false (the operation cancelled) at the deadline.
  bool RunUntil(const bool& done, Clock::time_point deadline) {
    RunSliced(done, deadline);
    if (done) return true;
    CancelPending();
    return false;
  }

  /// The next frame from the master, or why there is none (empty `error` when there is one).
  Frame ReadFrame(Clock::time_point deadline, std::string& error) {
    for (;;) {
      if (!leftover.empty()) {
        try {
          leftover.erase(0, decoder.Feed(leftover));
        } catch (const ControlPlaneError& e) {
          throw ControlPlaneError(fmt::format("[control plane] rank {}: the master {} sent a malformed frame during the "
                                              "handshake: {}", options.rank, Where(), Unprefixed(e.what())));
        }
        if (decoder.HasFrame()) return decoder.TakeFrame();
      }
      bool done = false;
      boost::system::error_code result;
      std::size_t n = 0;
      socket.async_read_some(asio::buffer(read_buffer), [&](const boost::system::error_code& e, std::size_t k) {
        done = true;
        result = e;
        n = k;
      });
      if (!RunUntil(done, deadline)) {
        error = fmt::format("no handshake within {}", Seconds(HandshakeTimeout()));
        return {};
      }
      if (result) {
        error = fmt::format("the connection closed during the handshake ({})", Lower(result.message()));
        return {};
      }
      leftover.append(read_buffer.data(), n);
    }
  }

  /// The handshake (top of this file): "" once both sides proved they know the token, or why the connection
  /// failed (worth retrying). Throws ControlPlaneError when the token is refused or the master cannot prove it.
  std::string Handshake(Clock::time_point deadline) {
    decoder = wire::Decoder(wire::kMaxUnauthenticatedFrame);
    leftover.clear();
    std::string error;
    const Frame challenge = ReadFrame(deadline, error);
    if (!error.empty()) return error;
    if (challenge.type != Type::kChallenge || challenge.strs.size() != 2 || challenge.strs[0] != kProtocol ||
        challenge.strs[1].size() != wire::kNonceBytes)
      throw ControlPlaneError(fmt::format("[control plane] rank {}: {} is not a control plane of this version of Weir: "
                                          "its first frame is not a {} challenge", options.rank, Where(), kProtocol));
    const std::string client_nonce = wire::RandomNonce();
    const std::string proof = wire::ClientProof(options.job_token, challenge.strs[1], client_nonce, options.rank,
                                                options.world_size);
    const std::string auth = wire::Encode(Frame{Type::kAuth, 0, {options.rank, options.world_size},
                                                {client_nonce, proof}});
    bool done = false;
    boost::system::error_code result;
    asio::async_write(socket, asio::buffer(auth), [&](const boost::system::error_code& e, std::size_t) {
      done = true;
      result = e;
    });
    if (!RunUntil(done, deadline)) return fmt::format("no handshake within {}", Seconds(HandshakeTimeout()));
    if (result) return fmt::format("the connection closed during the handshake ({})", Lower(result.message()));
    const Frame answer = ReadFrame(deadline, error);
    if (!error.empty()) return error;
    if (answer.type == Type::kAuthRefused)
      throw ControlPlaneError(fmt::format("[control plane] rank {}: the master {} refused this rank: the job token did "
                                          "not match (WEIR_JOB_TOKEN must be the same on every rank)", options.rank,
                                          Where()));
    if (answer.type != Type::kAuthOk || answer.strs.size() != 1 ||
        !SameMac(answer.strs[0], wire::MasterProof(options.job_token, challenge.strs[1], client_nonce, options.rank,
                                                   options.world_size)))
      throw ControlPlaneError(fmt::format("[control plane] rank {}: the master {} did not prove it knows the job token: "
                                          "it is not this job's master, or its WEIR_JOB_TOKEN differs", options.rank,
                                          Where()));
    decoder.SetMaxBody(wire::kMaxFrame);
    return "";
  }

  /// Handles every complete frame in `data`; false when the master sent a malformed one.
  bool Consume(std::string_view data) {
    try {
      while (!data.empty()) {
        data.remove_prefix(decoder.Feed(data));
        if (decoder.HasFrame()) Handle(decoder.TakeFrame());
      }
    } catch (const ControlPlaneError&) {
      return false;
    }
    return true;
  }

  void StartIo() {
    io.restart();
    const bool ok = Consume(leftover);  // e.g. a LOST notice that came right after AUTH_OK
    leftover.clear();
    Heartbeat();
    if (ok) {
      Read();
    } else {
      ConnectionLost();
    }
    thread = std::thread([this] {
      io.run();
      io_done = true;
    });
  }

  void Shutdown() {
    if (!thread.joinable()) return;
    if (!io_done) {
      auto done = std::make_shared<std::promise<void>>();
      auto future = done->get_future();
      asio::post(io, [this, done] {
        closing = true;
        closed_promise = done;
        heartbeat.cancel();
        Enqueue(wire::Encode(Frame{Type::kBye, 0, {}, {}}));
      });
      future.wait_for(std::chrono::seconds(1));  // bounded: a stuck master cannot hold up our exit
    }
    io.stop();
    thread.join();
  }

  void FinishClosing() {
    boost::system::error_code ec;
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
    if (closed_promise) {
      closed_promise->set_value();
      closed_promise.reset();
    }
  }

  void Enqueue(std::string frame) {
    if (!socket.is_open()) return;
    out.push_back(std::move(frame));
    if (!writing) Write();
  }

  void Write() {
    writing = true;
    asio::async_write(socket, asio::buffer(out.front()), [this](const boost::system::error_code& ec, std::size_t) {
      writing = false;
      if (ec) return ConnectionLost();
      out.pop_front();
      if (!out.empty()) return Write();
      if (closing) FinishClosing();
    });
  }

  void Heartbeat() {
    heartbeat.expires_after(options.heartbeat_interval);
    heartbeat.async_wait([this](const boost::system::error_code& ec) {
      if (ec || closing) return;
      if (!heartbeats_paused) Enqueue(wire::Encode(Frame{Type::kHeartbeat, 0, {}, {}}));
      Heartbeat();
    });
  }

  void Read() {
    socket.async_read_some(asio::buffer(read_buffer), [this](const boost::system::error_code& ec, std::size_t n) {
      if (ec || !Consume(std::string_view(read_buffer.data(), n))) return ConnectionLost();
      Read();
    });
  }

  void Handle(const Frame& f) {
    std::lock_guard lock(mu);
    if (f.type == Type::kLost) {
      if (!f.ints.empty()) lost.push_back(static_cast<int>(f.ints[0]));
      return;
    }
    auto it = pending.find(f.id);
    if (it == pending.end()) return;  // the caller gave up already
    it->second->set_value(Reply{f.type == Type::kOk, f.strs.empty() ? std::string() : f.strs[0]});
    pending.erase(it);
  }

  void ConnectionLost() {
    boost::system::error_code ec;
    socket.close(ec);
    heartbeat.cancel();
    if (closing) return FinishClosing();
    std::lock_guard lock(mu);
    if (closed_message.empty())
      closed_message = fmt::format("[control plane] rank {}: the connection to the master {} closed", options.rank,
                                   Where());
    for (auto& [id, p] : pending) p->set_value(Reply{false, closed_message});
    pending.clear();
  }

  /// Sends a request and waits for its answer for `wait` plus a grace; throws ControlPlaneError on an error.
  std::string Call(Frame f, milliseconds wait, const std::string& what) {
    auto promise = std::make_shared<Promise>();
    auto future = promise->get_future();
    {
      std::lock_guard lock(mu);
      if (!closed_message.empty()) throw ControlPlaneError(closed_message);
      f.id = next_id++;
      pending[f.id] = promise;
    }
    const auto id = f.id;
    asio::post(io, [this, frame = wire::Encode(f)]() mutable { Enqueue(std::move(frame)); });
    bool answered = false;
    try {
      answered = WaitInterruptibly(future, Clock::now() + wait + kAnswerGrace);
    } catch (...) {  // the caller gave up (Ctrl-C): a late answer finds no one waiting
      std::lock_guard lock(mu);
      pending.erase(id);
      throw;
    }
    if (!answered) {
      std::lock_guard lock(mu);
      pending.erase(id);
      if (future.wait_for(milliseconds(0)) != std::future_status::ready)
        throw ControlPlaneError(fmt::format("[control plane] rank {}: the master {} did not answer {} within {}",
                                            options.rank, Where(), what, Seconds(wait + kAnswerGrace)));
    }
    auto reply = future.get();
    if (!reply.ok) throw ControlPlaneError(reply.payload);
    return reply.payload;
  }

  /// A negative timeout means the rendezvous timeout; a huge one is capped (a year) so deadlines cannot overflow.
  milliseconds Resolve(milliseconds t) const {
    return std::min<milliseconds>(t.count() < 0 ? options.rendezvous_timeout : t, std::chrono::hours(24 * 365));
  }
};

ControlPlaneClient::ControlPlaneClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ControlPlaneClient::~ControlPlaneClient() = default;

std::unique_ptr<ControlPlaneClient> ControlPlaneClient::Connect(const ControlPlaneOptions& options) {
  ValidateControlPlaneOptions(options, /*for_server=*/false);
  auto impl = std::make_unique<Impl>(options);
  const auto deadline = Clock::now() + options.rendezvous_timeout;
  impl->ConnectAndAuthenticate(deadline);
  impl->StartIo();
  const auto left = std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
  const std::vector<std::int64_t> hello{options.rank, options.world_size, left.count(),
                                        options.rendezvous_timeout.count()};
  impl->Call(Frame{Type::kHello, 0, hello, {}}, left, "the rendezvous");
  return std::unique_ptr<ControlPlaneClient>(new ControlPlaneClient(std::move(impl)));
}

void ControlPlaneClient::Set(const std::string& key, const Bytes& value, Timeout timeout) {
  impl_->Call(Frame{Type::kSet, 0, {}, {key, value}}, impl_->Resolve(timeout), fmt::format("Set({})", Quoted(key)));
}

ControlPlaneClient::Bytes ControlPlaneClient::Get(const std::string& key, Timeout timeout) {
  const auto t = impl_->Resolve(timeout);
  return impl_->Call(Frame{Type::kGet, 0, {t.count()}, {key}}, t, fmt::format("Get({})", Quoted(key)));
}

void ControlPlaneClient::Wait(const std::vector<std::string>& keys, Timeout timeout) {
  const auto t = impl_->Resolve(timeout);
  impl_->Call(Frame{Type::kWait, 0, {t.count()}, keys}, t, fmt::format("Wait of {} keys", keys.size()));
}

std::int64_t ControlPlaneClient::Add(const std::string& key, std::int64_t delta, Timeout timeout) {
  const auto s = impl_->Call(Frame{Type::kAdd, 0, {delta}, {key}}, impl_->Resolve(timeout),
                             fmt::format("Add({})", Quoted(key)));
  std::int64_t value = 0;
  std::from_chars(s.data(), s.data() + s.size(), value);
  return value;
}

void ControlPlaneClient::Barrier(const std::string& name, Timeout timeout) {
  const auto t = impl_->Resolve(timeout);
  impl_->Call(Frame{Type::kBarrier, 0, {t.count()}, {name}}, t, fmt::format("Barrier({})", Quoted(name)));
}

std::vector<int> ControlPlaneClient::LostRanks() const {
  std::lock_guard lock(impl_->mu);
  return impl_->lost;
}

std::string ControlPlaneClient::Broken() const {
  std::lock_guard lock(impl_->mu);
  if (!impl_->lost.empty()) return fmt::format("rank {} lost", fmt::join(impl_->lost, ", "));
  return impl_->closed_message;
}

int ControlPlaneClient::Rank() const { return impl_->options.rank; }
int ControlPlaneClient::WorldSize() const { return impl_->options.world_size; }

void ControlPlaneClient::PauseHeartbeatsForTesting(bool paused) { impl_->heartbeats_paused = paused; }

}  // namespace weir::internal
