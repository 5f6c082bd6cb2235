// file_rendezvous and the launcher defaults (rendezvous.h): rank 0's file, written by rename, and
// one answer file per other rank, created by link() so that two processes cannot both be rank r.
#include "distributed/rendezvous.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include "core/check.h"
#include "core/timer.h"

namespace nanogpt {

namespace {

constexpr char kMagic[4] = {'N', 'G', 'R', 'V'};
constexpr uint32_t kVersion = 1;
constexpr auto kPoll = std::chrono::milliseconds(20);

// Keeps file names plain: characters other than [A-Za-z0-9._-] become '_'.
std::string sanitized(const std::string& id) {
  std::string out = id;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return out;
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void put_bytes(std::string& out, const void* p, size_t n) {
  put_u32(out, static_cast<uint32_t>(n));
  out.append(static_cast<const char*>(p), n);
}

// Reads what put_* wrote; `ok` turns false on a short or malformed input.
struct Reader {
  const std::string& in;
  size_t pos = 0;
  bool ok = true;
  uint32_t u32() {
    uint32_t v = 0;
    if (pos + 4 > in.size()) return ok = false, 0;
    std::memcpy(&v, in.data() + pos, 4);
    pos += 4;
    return v;
  }
  std::string bytes() {
    const uint32_t n = u32();
    if (!ok || pos + n > in.size()) return ok = false, std::string();
    std::string s = in.substr(pos, n);
    pos += n;
    return s;
  }
};

// A record: magic, version, rank, world size, run id, payload.
struct Record {
  int rank = 0, world_size = 0;
  std::string run_id, payload;
};

std::string encode(const Record& r) {
  std::string out(kMagic, 4);
  put_u32(out, kVersion);
  put_u32(out, static_cast<uint32_t>(r.rank));
  put_u32(out, static_cast<uint32_t>(r.world_size));
  put_bytes(out, r.run_id.data(), r.run_id.size());
  put_bytes(out, r.payload.data(), r.payload.size());
  return out;
}

// nullopt when the file is missing; throws when it is not one of ours.
std::optional<Record> read_record(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  const std::string in((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Reader r{in};
  Record rec;
  CHECK(in.size() >= 4 && std::memcmp(in.data(), kMagic, 4) == 0,
        "rendezvous: {} is not a nanogpt rendezvous file (expected it to start with 'NGRV'); "
        "fix: remove it, or give the rendezvous another directory or run id",
        path.string());
  r.pos = 4;
  const uint32_t version = r.u32();
  CHECK(r.ok && version == kVersion,
        "rendezvous: {} has version {}, expected {}; fix: remove it (an older nanogpt left it)",
        path.string(), version, kVersion);
  rec.rank = static_cast<int>(r.u32());
  rec.world_size = static_cast<int>(r.u32());
  rec.run_id = r.bytes();
  rec.payload = r.bytes();
  CHECK(r.ok, "rendezvous: {} is truncated; fix: remove it", path.string());
  return rec;
}

// Writes `bytes` to `tmp` and flushes it to the file system.
void write_file(const std::filesystem::path& tmp, const std::string& bytes) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0, "rendezvous: cannot create {}: {}; fix: give a directory every rank can write",
        tmp.string(), std::strerror(errno));
  const bool ok = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  CHECK(ok, "rendezvous: cannot write {}: {}", tmp.string(), std::strerror(errno));
}

// A name beside `path` that no other process or thread writes to.
std::filesystem::path temporary_beside(const std::filesystem::path& path) {
  return fmt::format("{}.tmp.{}.{:x}", path.string(), ::getpid(), std::random_device{}());
}

std::filesystem::path answer_path(const std::filesystem::path& base, int rank) {
  return base.string() + ".rank" + std::to_string(rank);
}

void check_spec(const RendezvousSpec& spec) {
  CHECK(spec.world_size >= 1 && spec.rank >= 0 && spec.rank < spec.world_size,
        "rendezvous: rank {} of a world of {}: expected a rank 0..world_size-1", spec.rank,
        spec.world_size);
}

Blob rank0_file(const std::filesystem::path& base, const RendezvousSpec& spec, const Blob& blob) {
  for (int r = 1; r < spec.world_size; ++r) std::filesystem::remove(answer_path(base, r));
  const std::filesystem::path tmp = temporary_beside(base);
  write_file(tmp, encode({0, spec.world_size, spec.run_id, std::string(blob.begin(), blob.end())}));
  std::filesystem::rename(tmp, base);
  Timer waited;
  std::vector<bool> arrived(static_cast<size_t>(spec.world_size), false);
  arrived[0] = true;
  for (int missing = spec.world_size - 1; missing > 0;) {
    for (int r = 1; r < spec.world_size; ++r) {
      if (arrived[static_cast<size_t>(r)]) continue;
      const auto answer = read_record(answer_path(base, r));
      if (!answer) continue;
      CHECK(answer->world_size == spec.world_size,
            "rendezvous in {}: rank {} has world size {} but rank 0 has {}; fix: start every rank "
            "with the same world size",
            base.parent_path().string(), r, answer->world_size, spec.world_size);
      arrived[static_cast<size_t>(r)] = true;
      --missing;
    }
    if (missing == 0) break;
    if (waited.seconds() > spec.timeout_s) {
      std::string names;
      for (int r = 1; r < spec.world_size; ++r) {
        if (!arrived[static_cast<size_t>(r)]) names += (names.empty() ? "" : ", ") + std::to_string(r);
      }
      fail("rendezvous in {} (run '{}'): rank 0 waited {:.0f} s and rank{} {} never arrived "
           "({} of {} ranks did); fix: check that those ranks started, see the same directory "
           "and run id, or raise the timeout",
           base.parent_path().string(), spec.run_id, waited.seconds(), missing == 1 ? "" : "s",
           names, spec.world_size - missing, spec.world_size);
    }
    std::this_thread::sleep_for(kPoll);
  }
  std::filesystem::remove(base);
  for (int r = 1; r < spec.world_size; ++r) std::filesystem::remove(answer_path(base, r));
  return blob;
}

Blob peer_file(const std::filesystem::path& base, const RendezvousSpec& spec) {
  Timer waited;
  std::optional<Record> rec;
  while (!(rec = read_record(base)) || rec->run_id != spec.run_id) {
    if (waited.seconds() > spec.timeout_s) {
      fail("rendezvous: rank {} waited {:.0f} s for rank 0's file {} (run '{}') and it never "
           "appeared; fix: check that rank 0 started and sees the same directory (a shared file "
           "system) and run id, or raise the timeout",
           spec.rank, waited.seconds(), base.string(), spec.run_id);
    }
    std::this_thread::sleep_for(kPoll);
  }
  // Answer first (rank 0 then reports a size mismatch too), by link(): a second process with this
  // rank finds the answer there and is refused.
  const std::filesystem::path answer = answer_path(base, spec.rank);
  const std::filesystem::path tmp = temporary_beside(answer);
  write_file(tmp, encode({spec.rank, spec.world_size, spec.run_id,
                          host_name() + " pid " + std::to_string(::getpid())}));
  const int linked = ::link(tmp.c_str(), answer.c_str());
  const int link_errno = errno;
  std::filesystem::remove(tmp);
  if (linked != 0 && link_errno == EEXIST) {
    const auto other = read_record(answer);
    fail("rendezvous in {}: rank {} has already arrived (from {}): two processes were given the "
         "same rank; fix: give each process its own rank",
         base.parent_path().string(), spec.rank, other ? other->payload : "another process");
  }
  CHECK(linked == 0, "rendezvous: cannot create {}: {}", answer.string(),
        std::strerror(link_errno));
  CHECK(rec->world_size == spec.world_size,
        "rendezvous in {}: rank {} has world size {} but rank 0 wrote world size {} into {}; fix: "
        "start every rank with the same world size",
        base.parent_path().string(), spec.rank, spec.world_size, rec->world_size, base.string());
  return Blob(rec->payload.begin(), rec->payload.end());
}

}  // namespace

std::string default_run_id(const EnvLookup& env) {
  if (auto id = env("TORCHELASTIC_RUN_ID")) return *id;
  if (auto job = env("SLURM_JOB_ID")) {
    if (auto step = env("SLURM_STEP_ID")) return *job + "." + *step;
    return *job;
  }
  return "default";
}

Blob file_rendezvous(const std::string& dir, const RendezvousSpec& spec, const Blob& blob) {
  check_spec(spec);
  CHECK(!dir.empty(), "rendezvous: no directory given for the file rendezvous");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path base =
      std::filesystem::path(dir) / ("nanogpt-rendezvous-" + sanitized(spec.run_id) + ".bin");
  if (spec.world_size == 1) return blob;
  return spec.rank == 0 ? rank0_file(base, spec, blob) : peer_file(base, spec);
}

TcpAddress tcp_address_from_env(const EnvLookup& env, const std::string& override_address) {
  TcpAddress a;
  std::string port_text, origin;
  if (!override_address.empty()) {
    const size_t colon = override_address.rfind(':');
    CHECK(colon != std::string::npos && colon > 0,
          "rendezvous address '{}': expected host:port, e.g. node0:29500", override_address);
    a.host = override_address.substr(0, colon);
    port_text = override_address.substr(colon + 1);
    origin = "rendezvous address '" + override_address + "'";
  } else {
    a.host = env("MASTER_ADDR").value_or(a.host);
    port_text = env("MASTER_PORT").value_or(std::to_string(a.port));
    origin = "MASTER_PORT=" + port_text;
  }
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  CHECK(!port_text.empty() && *end == '\0' && port >= 1 && port <= 65535,
        "{}: expected a TCP port 1..65535 that rank 0 can listen on; fix: give a free port, e.g. "
        "29500",
        origin);
  a.port = static_cast<int>(port);
  return a;
}

RendezvousChoice parse_rendezvous(const std::string& value, const EnvLookup& env) {
  RendezvousChoice c;
  if (value.empty()) {
    c.tcp = tcp_address_from_env(env);
  } else if (value.rfind("tcp:", 0) == 0) {
    c.tcp = tcp_address_from_env(env, value.substr(4));
  } else if (value.rfind("file:", 0) == 0 && value.size() > 5) {
    c.file = true;
    c.dir = value.substr(5);
  } else {
    fail("rendezvous = '{}': expected '' (TCP at MASTER_ADDR:MASTER_PORT, torchrun's), "
         "'tcp:HOST:PORT' (e.g. tcp:node0:29500) or 'file:DIR' (a directory every rank sees, "
         "e.g. file:/shared/rendezvous)",
         value);
  }
  return c;
}

std::string RendezvousChoice::describe() const {
  return file ? "file " + dir : fmt::format("TCP {}:{}", tcp.host, tcp.port);
}

Blob rendezvous(const RendezvousChoice& choice, const RendezvousSpec& spec, const Blob& blob) {
  return choice.file ? file_rendezvous(choice.dir, spec, blob)
                     : tcp_rendezvous(choice.tcp, spec, blob);
}

}  // namespace nanogpt
