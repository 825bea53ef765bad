// The control plane: a small TCP service that rank 0 hosts and every rank (rank 0 included) uses for
// rendezvous, a key-value store, barriers and heartbeats. Gloo's rendezvous store and the NCCL unique id
// are meant to travel through it, hence string keys and byte-string values.
//
// Every wait is bounded: each operation takes a timeout, and a rank whose connection drops or whose
// heartbeats stop fails every pending wait on every surviving rank with an error naming the lost rank.
// Every connection proves it knows the job's token before its first request is served, and the master proves
// it back (HMAC-SHA256 challenge-response; the token never travels). Until then a connection may send only
// small frames, within a short deadline. The protocol and the threading are described at the top of
// control_plane.cpp. No Asio type appears here.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace weir::internal {

struct ControlPlaneOptions {
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;  // 0 is allowed for the server only: any free port, see ControlPlaneServer::Port()
  int rank = 0;
  int world_size = 1;
  std::chrono::milliseconds rendezvous_timeout{300000};
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds heartbeat_timeout{10000};
  /// The secret every rank of the job shares (WEIR_JOB_TOKEN): a connection that cannot prove it knows it is
  /// refused. Empty is allowed only when master_addr is a loopback address (the handshake still runs).
  std::string job_token;
  /// How long a new connection has to complete the handshake (capped by rendezvous_timeout).
  std::chrono::milliseconds handshake_timeout{10000};
};

/// Throws std::invalid_argument naming the field, what it expects and what it got. `for_server` allows
/// master_port 0 (bind any free port). An empty job_token with a master_addr that is not a loopback address
/// is refused here, saying to set WEIR_JOB_TOKEN.
void ValidateControlPlaneOptions(const ControlPlaneOptions& options, bool for_server);

/// Every failure of the control plane at run time (timeouts, lost ranks, rejected registration, unreachable
/// master). Messages start with "[control plane]".
class ControlPlaneError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Hosted by rank 0: binds master_addr:master_port and serves on an io_context thread of its own until
/// destroyed. A port in use throws ControlPlaneError at once. It uses world_size and heartbeat_timeout of
/// the options; rank is ignored.
class ControlPlaneServer {
 public:
  explicit ControlPlaneServer(const ControlPlaneOptions& options);
  ~ControlPlaneServer();
  ControlPlaneServer(const ControlPlaneServer&) = delete;
  ControlPlaneServer& operator=(const ControlPlaneServer&) = delete;

  /// The port actually bound (differs from options.master_port when that was 0).
  int Port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One rank's connection to the master. Blocking calls with deadlines; safe to call from several threads.
class ControlPlaneClient {
 public:
  using Bytes = std::string;
  using Timeout = std::chrono::milliseconds;
  static constexpr Timeout kDefaultTimeout{-1};  // means options.rendezvous_timeout

  /// Connects (retrying until rendezvous_timeout), proves it knows the job token and checks that the master
  /// does, registers options.rank and returns once all world_size ranks registered. Throws ControlPlaneError
  /// when the master does not answer, the tokens differ (at once, no retry), the master rejects the
  /// registration (world size mismatch, rank out of range, rank registered twice) or some rank never connects.
  static std::unique_ptr<ControlPlaneClient> Connect(const ControlPlaneOptions& options);
  ~ControlPlaneClient();  // says goodbye to the master, so a clean exit is not reported as a lost rank
  ControlPlaneClient(const ControlPlaneClient&) = delete;
  ControlPlaneClient& operator=(const ControlPlaneClient&) = delete;

  void Set(const std::string& key, const Bytes& value, Timeout timeout = kDefaultTimeout);
  /// Waits until `key` exists, then returns its value.
  Bytes Get(const std::string& key, Timeout timeout = kDefaultTimeout);
  /// Waits until every key exists.
  void Wait(const std::vector<std::string>& keys, Timeout timeout = kDefaultTimeout);
  /// Atomically adds `delta` to the counter `key` (missing = 0) and returns the new value. Counters are
  /// stored as decimal text, so Get() of a counter returns e.g. "42".
  std::int64_t Add(const std::string& key, std::int64_t delta, Timeout timeout = kDefaultTimeout);
  /// Returns once every rank called Barrier(name); the same name can be reused after it completes.
  void Barrier(const std::string& name, Timeout timeout = kDefaultTimeout);

  /// Ranks the master reported lost (connection closed or heartbeats stopped), in the order lost.
  std::vector<int> LostRanks() const;
  /// Why the job is broken, for a rank waiting on its peers by other means (a data plane): the lost
  /// ranks, or the master's connection closing; empty while all is well. Cheap (one lock).
  std::string Broken() const;
  int Rank() const;
  int WorldSize() const;

  /// Test hook: stops (true) or resumes (false) the background heartbeats without closing the socket.
  void PauseHeartbeatsForTesting(bool paused);

 private:
  struct Impl;
  explicit ControlPlaneClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Whether `address` (an IP address, or a host name all of whose addresses are) is a loopback address:
/// 127.0.0.0/8 or ::1 (also IPv4-mapped). A name that does not resolve is not.
bool IsLoopbackAddress(const std::string& address);

/// The wire format, exposed so that tests can feed the decoder arbitrary bytes (control_plane.cpp describes it).
namespace control_plane_wire {

enum class Type : std::uint8_t {
  kHello = 1, kSet = 2, kGet = 3, kWait = 4, kAdd = 5, kBarrier = 6, kHeartbeat = 7, kBye = 8, kAuth = 9,
  kOk = 64, kError = 65, kLost = 66, kChallenge = 67, kAuthOk = 68, kAuthRefused = 69,
};

struct Frame {
  Type type{};
  std::uint64_t id = 0;
  std::vector<std::int64_t> ints;
  std::vector<std::string> strs;
  bool operator==(const Frame&) const = default;
};

/// Frame bodies allowed before the peer authenticated, and after.
inline constexpr std::uint32_t kMaxUnauthenticatedFrame = 4096;
inline constexpr std::uint32_t kMaxFrame = 256u << 20;
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kMacBytes = 32;  // HMAC-SHA256

/// The whole frame, length prefix included.
std::string Encode(const Frame& frame);

/// Turns a byte stream into frames, one at a time. A body is buffered as its bytes arrive (never allocated
/// from the announced length), so memory follows what the peer actually sent, and at most max_body.
class Decoder {
 public:
  explicit Decoder(std::uint32_t max_body) : max_body_(max_body) {}
  /// Takes bytes of `data` up to the end of the next complete frame and returns how many it took; then
  /// HasFrame() is true until TakeFrame(). Throws ControlPlaneError ("[control plane] malformed frame: ...")
  /// naming what is wrong: a length above max_body, an empty body, an unknown type, counts or lengths that
  /// do not fit the body, or bytes left over. After an error the decoder must not be fed again.
  std::size_t Feed(std::string_view data);
  bool HasFrame() const { return has_frame_; }
  /// Whether part of a frame has been taken (a stream that ends here was cut short).
  bool InFrame() const { return header_bytes_ > 0; }
  Frame TakeFrame();
  /// Applies to frames whose length prefix is not complete yet (raised once the peer authenticated).
  void SetMaxBody(std::uint32_t max_body) { max_body_ = max_body; }
  /// Bytes allocated for the frame in progress: never above its announced length, itself at most max_body.
  std::size_t BufferedCapacity() const { return body_.capacity(); }

 private:
  std::uint32_t max_body_;
  unsigned char header_[4]{};
  std::size_t header_bytes_ = 0;
  std::uint32_t length_ = 0;
  std::vector<char> body_;
  bool has_frame_ = false;
  Frame frame_;
};

/// Parses one body (without its length prefix). Throws ControlPlaneError as Decoder::Feed does.
Frame DecodeBody(std::string_view body);

/// The client's proof: HMAC-SHA256(token, "weir control plane v1: rank" || 0 || server_nonce || client_nonce ||
/// u64 rank || u64 world_size); the master's is the same with the nonces swapped under the label
/// "weir control plane v1: master", so one can never be replayed as the other.
std::string ClientProof(const std::string& token, std::string_view server_nonce, std::string_view client_nonce,
                        std::int64_t rank, std::int64_t world_size);
std::string MasterProof(const std::string& token, std::string_view server_nonce, std::string_view client_nonce,
                        std::int64_t rank, std::int64_t world_size);
/// kNonceBytes from OpenSSL's RAND_bytes; throws ControlPlaneError if it fails.
std::string RandomNonce();

}  // namespace control_plane_wire

}  // namespace weir::internal
