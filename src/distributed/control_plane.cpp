// The control plane: rendezvous, key-value store, barriers and heartbeats over TCP (Boost.Asio).
//
// Protocol. Length-prefixed binary frames, all integers big-endian:
//
//   frame   = u32 body_length, body                     (body_length <= kMaxFrame)
//   body    = u8 type, u64 request_id, u16 n_ints, i64 ints[n_ints], u16 n_strs, str strs[n_strs]
//   str     = u32 length, bytes[length]
//
// Requests (client -> master); timeouts are in milliseconds:
//   HELLO     ints {rank, world_size, wait_ms, configured_timeout_ms}   answered once all ranks registered
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
#include "distributed/control_plane.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <utility>  // before Asio: Boost 1.74 awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>
#include <cctype>
#include <charconv>
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
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::uint32_t kMaxFrame = 256u << 20;  // 256 MiB: far above any store value we expect
constexpr milliseconds kTick{20};                // the master's deadline and heartbeat resolution
constexpr milliseconds kAnswerGrace{2000};       // client: extra time for the master's answer
constexpr std::int64_t kMaxWaitMs = 365LL * 24 * 3600 * 1000;  // a year: deadlines cannot overflow

enum class Type : std::uint8_t {
  kHello = 1, kSet = 2, kGet = 3, kWait = 4, kAdd = 5, kBarrier = 6, kHeartbeat = 7, kBye = 8,
  kOk = 64, kError = 65, kLost = 66,
};

struct Frame {
  Type type{};
  std::uint64_t id = 0;
  std::vector<std::int64_t> ints;
  std::vector<std::string> strs;
};

void PutU(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

/// The whole frame, length prefix included.
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

std::uint32_t DecodeLength(const std::array<unsigned char, 4>& h) {
  return (std::uint32_t{h[0]} << 24) | (std::uint32_t{h[1]} << 16) | (std::uint32_t{h[2]} << 8) | h[3];
}

/// Parses a body; false when it is malformed.
bool Decode(const std::string& body, Frame& f) {
  std::size_t pos = 0;
  auto get = [&](int bytes, std::uint64_t& v) {
    if (body.size() - pos < static_cast<std::size_t>(bytes)) return false;
    v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(body[pos++]);
    return true;
  };
  std::uint64_t v = 0;
  if (!get(1, v)) return false;
  f.type = static_cast<Type>(v);
  if (!get(8, f.id)) return false;
  if (!get(2, v)) return false;
  f.ints.resize(v);
  for (auto& i : f.ints) {
    if (!get(8, v)) return false;
    i = static_cast<std::int64_t>(v);
  }
  if (!get(2, v)) return false;
  f.strs.resize(v);
  for (auto& s : f.strs) {
    if (!get(4, v) || body.size() - pos < v) return false;
    s = body.substr(pos, v);
    pos += v;
  }
  return pos == body.size();
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

}  // namespace

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
}

// ---------------------------------------------------------------------------------------------- master

struct ControlPlaneServer::Impl {
  struct Conn {
    explicit Conn(asio::io_context& io) : socket(io) {}
    tcp::socket socket;
    std::array<unsigned char, 4> header{};
    std::string body;
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

  std::string Where() const { return fmt::format("{}:{}", options.master_addr, port); }

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
      if (!ec) {
        boost::system::error_code ignored;
        conn->socket.set_option(tcp::no_delay(true), ignored);
        conns.insert(conn);
        ReadHeader(conn);
      }
      Accept();
    });
  }

  void ReadHeader(const ConnPtr& c) {
    asio::async_read(c->socket, asio::buffer(c->header), [this, c](const boost::system::error_code& ec, std::size_t) {
      if (ec) return Close(c);
      const auto n = DecodeLength(c->header);
      if (n > kMaxFrame) return Close(c);
      c->body.resize(n);
      asio::async_read(c->socket, asio::buffer(c->body), [this, c](const boost::system::error_code& ec2, std::size_t) {
        if (ec2) return Close(c);
        Frame f;
        if (!Decode(c->body, f)) return Close(c);
        Handle(c, f);
        if (!c->closed) ReadHeader(c);
      });
    });
  }

  void Send(const ConnPtr& c, const Frame& f) {
    if (c->closed) return;
    c->out.push_back(Encode(f));
    if (!c->writing) Write(c);
  }

  void Write(const ConnPtr& c) {
    c->writing = true;
    auto done = [this, c](const boost::system::error_code& ec, std::size_t) {
      c->writing = false;
      if (ec) return Close(c);
      c->out.pop_front();
      if (!c->out.empty()) Write(c);
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
      if (c->rank != rank) Send(c, Frame{Type::kLost, 0, {rank}, {message}});
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
    if (c->rank >= 0) ranks[c->rank].last_seen = Clock::now();
    auto bad = [&] {
      Error(c, f.id, "[control plane] malformed request");
      Close(c);
    };
    if (f.type == Type::kHello) {
      if (f.ints.size() != 4) return bad();
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
      boost::system::error_code ec;
      std::string from = "an earlier connection";
      if (it->second.conn && !it->second.conn->closed) {
        auto ep = it->second.conn->socket.remote_endpoint(ec);
        if (!ec) from = fmt::format("{}:{}", ep.address().to_string(), ep.port());
      }
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

  // io thread only
  std::array<unsigned char, 4> header{};
  std::string body;
  std::deque<std::string> out;
  bool writing = false;
  bool closing = false;
  std::shared_ptr<std::promise<void>> closed_promise;

  std::string Where() const { return fmt::format("{}:{}", options.master_addr, options.master_port); }

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
      io.restart();
      io.run_for(deadline - now);
      if (!done) {  // the deadline passed during the attempt
        socket.close(ec);
        io.restart();
        io.run();
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
      pause = std::min(pause * 2, milliseconds(500));
    }
    throw ControlPlaneError(fmt::format("[control plane] rank {}: the master {} did not answer within {}: {}",
                                        options.rank, Where(), Seconds(options.rendezvous_timeout), last_error));
  }

  void StartIo() {
    io.restart();
    ReadHeader();
    Heartbeat();
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
        Enqueue(Encode(Frame{Type::kBye, 0, {}, {}}));
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
      if (!heartbeats_paused) Enqueue(Encode(Frame{Type::kHeartbeat, 0, {}, {}}));
      Heartbeat();
    });
  }

  void ReadHeader() {
    asio::async_read(socket, asio::buffer(header), [this](const boost::system::error_code& ec, std::size_t) {
      if (ec) return ConnectionLost();
      const auto n = DecodeLength(header);
      if (n > kMaxFrame) return ConnectionLost();
      body.resize(n);
      asio::async_read(socket, asio::buffer(body), [this](const boost::system::error_code& ec2, std::size_t) {
        Frame f;
        if (ec2 || !Decode(body, f)) return ConnectionLost();
        Handle(f);
        ReadHeader();
      });
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
    asio::post(io, [this, frame = Encode(f)]() mutable { Enqueue(std::move(frame)); });
    if (future.wait_for(wait + kAnswerGrace) != std::future_status::ready) {
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
  impl->ConnectSocket(deadline);
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
