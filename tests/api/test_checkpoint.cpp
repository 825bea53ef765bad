// Checkpoints in OneFlow's layout: round trips, the exact bytes on disk, atomic saves that leave
// nothing behind on failure, and clear errors (never a crash or a huge allocation) for corrupt files.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/checkpoint_internal.hpp"
#include "common/stale_files.hpp"
#include "scratch_dir.hpp"
#include "weir/checkpoint.hpp"

using namespace weir;
namespace fs = std::filesystem;
using weir::testing::ScratchDir;

namespace {

std::string ReadFile(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const fs::path& file, const std::string& contents) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  REQUIRE(out.good());
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  REQUIRE(out.good());
}

std::string Bytes(const Tensor& tensor) {
  return std::string(static_cast<const char*>(tensor.RawData()), tensor.NumBytes());
}

// Names in `dir` that look like leftovers of a save (temporary or set-aside folders).
std::vector<std::string> Leftovers(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp-") != std::string::npos || name.find(".old-") != std::string::npos) found.push_back(name);
  }
  return found;
}

std::set<std::string> Entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

// One tensor of every dtype, plus a rank-0 and two empty ones.
std::map<std::string, Tensor> EveryKind() {
  std::map<std::string, Tensor> variables;
  variables["dense1-weight"] = Tensor::FromVector<float>(Shape{2, 5}, {0.5f, -1.f, 2.25f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, -9.5f});
  variables["dense1.bias"] = Tensor::FromVector<double>(Shape{3}, {1e-300, -2.5, 3.141592653589793});
  variables["i32"] = Tensor::FromVector<std::int32_t>(Shape{2, 1, 2}, {-2147483647 - 1, -1, 0, 2147483647});
  variables["System-Train-TrainStep-train_job"] = Tensor::Scalar<std::int64_t>(600);
  variables["u8"] = Tensor::FromVector<std::uint8_t>(Shape{4}, {0, 1, 128, 255});
  variables["mask"] = Tensor::FromVector<bool>(Shape{5}, {true, false, false, true, true});
  variables["scalar"] = Tensor::Scalar<float>(-0.0f);
  variables["empty"] = Tensor(Shape{0, 3}, DType::kF32);
  variables["empty-i64"] = Tensor(Shape{0}, DType::kI64);
  // Mixed precision's storage types: kFloat16 and kBFloat16 in the meta, two bytes per value.
  Tensor f16(Shape{3}, DType::kF16), bf16(Shape{2}, DType::kBF16);
  f16.Data<float16>()[0] = float16(1.5f);
  f16.Data<float16>()[1] = float16(-65504.f);
  f16.Data<float16>()[2] = float16(6e-8f);
  bf16.Data<bfloat16>()[0] = bfloat16(3.0e38f);
  bf16.Data<bfloat16>()[1] = bfloat16(-0.1f);
  variables["f16"] = f16;
  variables["bf16"] = bf16;
  return variables;
}

// A checkpoint folder written by hand, as OneFlow (or a corruption) would leave it.
void WriteVariable(const fs::path& root, const std::string& name, const std::string& meta, const std::string& out,
                   bool with_meta = true) {
  fs::create_directories(root / name);
  if (with_meta) WriteFile(root / name / "meta", meta);
  WriteFile(root / name / "out", out);
  WriteFile(root / "snapshot_done", "");
}

std::string LoadError(const std::string& path) {
  try {
    LoadCheckpoint(path);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  FAIL("LoadCheckpoint did not throw");
  return "";
}

std::string LoadError(const std::string& path, const std::map<std::string, TensorSpec>& expected) {
  try {
    LoadCheckpoint(path, expected);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  FAIL("LoadCheckpoint did not throw");
  return "";
}

// "<prefix><tag>-<pid>-<random>", the name a save of process `pid` on the machine `tag` gives its temporary folder.
std::string OwnedName(const std::string& prefix, const std::string& tag, long pid, const std::string& random) {
  return prefix + tag + "-" + std::to_string(pid) + "-" + random;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("checkpoint: every dtype, rank 0 and empty tensors round-trip") {
  ScratchDir dir;
  const auto variables = EveryKind();
  SaveCheckpoint(dir / "ckpt", variables);
  const auto loaded = LoadCheckpoint(dir / "ckpt");
  REQUIRE(loaded.size() == variables.size());
  for (const auto& [name, tensor] : variables) {
    CAPTURE(name);
    REQUIRE(loaded.contains(name));
    const Tensor& back = loaded.at(name);
    CHECK(back.GetShape() == tensor.GetShape());
    CHECK(back.GetDType() == tensor.GetDType());
    CHECK(Bytes(back) == Bytes(tensor));
  }
  CHECK(loaded.at("System-Train-TrainStep-train_job").ToVector<std::int64_t>() == std::vector<std::int64_t>{600});
  CHECK(loaded.at("scalar").GetShape().Rank() == 0);
  CHECK(loaded.at("empty").GetShape() == Shape{0, 3});
  CHECK(Leftovers(dir.Path()).empty());
}

TEST_CASE("checkpoint: the files on disk are OneFlow's layout, byte for byte") {
  ScratchDir dir;
  const auto variables = EveryKind();
  SaveCheckpoint(dir / "ckpt", variables);
  const fs::path root = dir.Path() / "ckpt";

  std::set<std::string> expected_entries{"snapshot_done"};
  for (const auto& [name, tensor] : variables) expected_entries.insert(name);
  CHECK(Entries(root) == expected_entries);
  CHECK(fs::is_regular_file(root / "snapshot_done"));
  CHECK(fs::file_size(root / "snapshot_done") == 0);

  for (const auto& [name, tensor] : variables) {
    CAPTURE(name);
    CHECK(Entries(root / name) == std::set<std::string>{"meta", "out"});
    CHECK(ReadFile(root / name / "out") == Bytes(tensor));
  }
  CHECK(ReadFile(root / "dense1-weight" / "meta") == "shape {\n  dim: 2\n  dim: 5\n}\ndata_type: kFloat\n");
  CHECK(ReadFile(root / "dense1.bias" / "meta") == "shape {\n  dim: 3\n}\ndata_type: kDouble\n");
  CHECK(ReadFile(root / "i32" / "meta") == "shape {\n  dim: 2\n  dim: 1\n  dim: 2\n}\ndata_type: kInt32\n");
  CHECK(ReadFile(root / "System-Train-TrainStep-train_job" / "meta") == "shape {\n}\ndata_type: kInt64\n");
  CHECK(ReadFile(root / "u8" / "meta") == "shape {\n  dim: 4\n}\ndata_type: kUInt8\n");
  CHECK(ReadFile(root / "mask" / "meta") == "shape {\n  dim: 5\n}\ndata_type: kBool\n");
  CHECK(ReadFile(root / "empty" / "meta") == "shape {\n  dim: 0\n  dim: 3\n}\ndata_type: kFloat\n");
  CHECK(ReadFile(root / "empty" / "out").empty());

  // Little-endian, C order: the first f32 of dense1-weight is 0.5 = 0x3f000000.
  const std::string out = ReadFile(root / "dense1-weight" / "out");
  CHECK(out.substr(0, 4) == std::string("\x00\x00\x00\x3f", 4));
}

TEST_CASE("checkpoint: a non-empty folder is refused unless overwrite replaces it") {
  ScratchDir dir;
  const std::string path = dir / "ckpt";
  fs::create_directories(path);
  WriteFile(fs::path(path) / "precious.txt", "keep me");

  try {
    SaveCheckpoint(path, EveryKind());
    FAIL("saving into a non-empty folder did not throw");
  } catch (const std::runtime_error& error) {
    CHECK(Contains(error.what(), "non-empty"));
    CHECK(Contains(error.what(), path));
  }
  CHECK(ReadFile(fs::path(path) / "precious.txt") == "keep me");
  CHECK(Entries(path) == std::set<std::string>{"precious.txt"});
  CHECK(Leftovers(dir.Path()).empty());

  SaveCheckpoint(path, {{"w", Tensor::Scalar<float>(1.f)}}, SaveOptions{.overwrite = true});
  CHECK(Entries(path) == std::set<std::string>{"snapshot_done", "w"});
  CHECK(Leftovers(dir.Path()).empty());

  // Replacing a checkpoint with another: nothing of the old one survives.
  SaveCheckpoint(path, {{"v", Tensor::Scalar<double>(2.0)}}, SaveOptions{.overwrite = true});
  const auto loaded = LoadCheckpoint(path);
  REQUIRE(loaded.size() == 1);
  CHECK(loaded.at("v").ToVector<double>() == std::vector<double>{2.0});
  CHECK(Leftovers(dir.Path()).empty());
}

TEST_CASE("checkpoint: an existing empty folder, a trailing slash and missing parents are fine") {
  ScratchDir dir;
  fs::create_directories(dir / "empty");
  SaveCheckpoint(dir / "empty", {{"w", Tensor::Scalar<float>(3.f)}});
  CHECK(LoadCheckpoint(dir / "empty").at("w").ToVector<float>() == std::vector<float>{3.f});

  SaveCheckpoint(dir / "slash/", {{"w", Tensor::Scalar<float>(4.f)}});
  CHECK(LoadCheckpoint(dir / "slash").at("w").ToVector<float>() == std::vector<float>{4.f});

  SaveCheckpoint(dir / "a/b/c", {{"w", Tensor::Scalar<float>(5.f)}});
  CHECK(LoadCheckpoint(dir / "a/b/c").at("w").ToVector<float>() == std::vector<float>{5.f});

  // A checkpoint with no variables is still a complete checkpoint.
  SaveCheckpoint(dir / "none", {});
  CHECK(LoadCheckpoint(dir / "none").empty());
  CHECK(Leftovers(dir.Path()).empty());
  CHECK(Leftovers(dir.Path() / "a" / "b").empty());
}

TEST_CASE("checkpoint: bad variable names and tensors are refused before anything is written") {
  ScratchDir dir;
  const std::string path = dir / "ckpt";
  const Tensor good = Tensor::Scalar<float>(1.f);
  for (const std::string& name :
       {std::string(), std::string("a/b"), std::string("/abs"), std::string("."), std::string(".."),
        std::string("snapshot_done"), std::string("nul\0byte", 8)}) {
    CAPTURE(name);
    CHECK_THROWS_AS(SaveCheckpoint(path, {{"fine", good}, {name, good}}), std::invalid_argument);
    CHECK_FALSE(fs::exists(path));
  }
  CHECK_THROWS_WITH_AS(SaveCheckpoint(path, {{"undefined", Tensor()}}), doctest::Contains("'undefined'"),
                       std::invalid_argument);
  CHECK_THROWS_AS(SaveCheckpoint("", {{"w", good}}), std::invalid_argument);
  CHECK_FALSE(fs::exists(path));
  CHECK(Entries(dir.Path()).empty());
}

TEST_CASE("checkpoint: a failure part-way leaves no checkpoint and no temporary folder") {
  ScratchDir dir;
  const std::string path = dir / "ckpt";
  // Valid by our rules, but longer than a file name may be: mkdir fails after "a" was written.
  const std::string too_long(300, 'z');
  std::map<std::string, Tensor> variables{{"a", Tensor::Scalar<float>(1.f)}, {too_long, Tensor::Scalar<float>(2.f)}};
  try {
    SaveCheckpoint(path, variables);
    FAIL("an over-long variable name did not fail the save");
  } catch (const std::runtime_error& error) {
    CHECK(Contains(error.what(), "variable '" + too_long + "'"));
    CHECK(Contains(error.what(), "File name too long"));
  }
  CHECK_FALSE(fs::exists(path));
  CHECK(Entries(dir.Path()).empty());

  // With overwrite, a failed save leaves the old checkpoint exactly as it was.
  SaveCheckpoint(path, {{"old", Tensor::Scalar<std::int32_t>(7)}});
  CHECK_THROWS_AS(SaveCheckpoint(path, variables, SaveOptions{.overwrite = true}), std::runtime_error);
  CHECK(Entries(dir.Path()) == std::set<std::string>{"ckpt"});
  const auto loaded = LoadCheckpoint(path);
  REQUIRE(loaded.size() == 1);
  CHECK(loaded.at("old").ToVector<std::int32_t>() == std::vector<std::int32_t>{7});
}

TEST_CASE("checkpoint: a save removes the temporary folders of killed saves on this machine, and only those") {
  ScratchDir dir;
  // A pid that no longer exists: a child that has exited and been waited for.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  REQUIRE(::waitpid(child, nullptr, 0) == child);
  const std::string tag = internal::MachineTag();
  const std::string other_tag = tag == "00000000" ? "11111111" : "00000000";
  const std::string random = "0123456789abcdef";
  const std::string killed = OwnedName("step_1.tmp-", tag, child, random);
  const std::string alive = OwnedName("step_2.tmp-", tag, ::getpid(), random);
  const std::string elsewhere = OwnedName("step_3.tmp-", other_tag, child, random);
  const std::string swapping = OwnedName("step_4.old-", tag, child, random);  // holds a previous checkpoint
  for (const std::string& name : {killed, alive, elsewhere, swapping}) {
    fs::create_directories(dir.Path() / name / "w");
    WriteFile(dir.Path() / name / "w" / "out", "partial");
  }
  SaveCheckpoint(dir / "step_5", {{"w", Tensor::Scalar<float>(1.f)}});
  CHECK(Entries(dir.Path()) == std::set<std::string>{alive, elsewhere, swapping, "step_5"});
}

TEST_CASE("checkpoint: a read-only parent folder fails cleanly") {
  if (::geteuid() == 0) {
    MESSAGE("running as root, which ignores folder permissions: skipped");
    return;
  }
  ScratchDir dir;
  const fs::path parent = dir.Path() / "locked";
  fs::create_directories(parent);
  fs::permissions(parent, fs::perms::owner_read | fs::perms::owner_exec);
  CHECK_THROWS_WITH_AS(SaveCheckpoint((parent / "ckpt").string(), {{"w", Tensor::Scalar<float>(1.f)}}),
                       doctest::Contains("Permission denied"), std::runtime_error);
  fs::permissions(parent, fs::perms::owner_all);
  CHECK(Entries(parent).empty());
}

TEST_CASE("checkpoint: replacing a folder without an atomic swap keeps nothing aside") {
  ScratchDir dir;
  const std::string path = dir / "ckpt";
  SaveCheckpoint(path, {{"old", Tensor::Scalar<float>(1.f)}});
  SaveCheckpoint(dir / "new", {{"new", Tensor::Scalar<float>(2.f)}});
  internal::ReplaceFolder(dir.Path() / "new", path, /*allow_exchange=*/false);
  CHECK(Entries(dir.Path()) == std::set<std::string>{"ckpt"});
  CHECK(Entries(path) == std::set<std::string>{"new", "snapshot_done"});

  SaveCheckpoint(dir / "newer", {{"newer", Tensor::Scalar<float>(3.f)}});
  internal::ReplaceFolder(dir.Path() / "newer", path, /*allow_exchange=*/true);
  CHECK(Entries(dir.Path()) == std::set<std::string>{"ckpt"});
  CHECK(Entries(path) == std::set<std::string>{"newer", "snapshot_done"});
}

TEST_CASE("checkpoint: loading names the variable, the file and the problem") {
  ScratchDir dir;
  const fs::path root = dir.Path() / "ckpt";
  const std::string path = root.string();
  const std::string float_2x5 = "shape {\n  dim: 2\n  dim: 5\n}\ndata_type: kFloat\n";

  SUBCASE("missing snapshot_done") {
    SaveCheckpoint(path, EveryKind());
    fs::remove(root / "snapshot_done");
    const std::string error = LoadError(path);
    CHECK(Contains(error, "incomplete"));
    CHECK(Contains(error, "snapshot_done"));
  }
  SUBCASE("not there at all") {
    CHECK(Contains(LoadError(dir / "nothing"), "No such file or directory"));
  }
  SUBCASE("truncated out, with the numbers") {
    WriteVariable(root, "dense1-weight", "shape {\n  dim: 784\n  dim: 512\n}\ndata_type: kFloat\n",
                  std::string(1000, '\0'));
    const std::string error = LoadError(path);
    CHECK(Contains(error, "variable 'dense1-weight'"));
    CHECK(Contains(error, (root / "dense1-weight" / "out").string()));
    CHECK(Contains(error, "has 1000 bytes, meta says (784,512) f32 = 1605632 bytes (truncated)"));
  }
  SUBCASE("oversized out") {
    WriteVariable(root, "w", float_2x5, std::string(41, '\0'));
    const std::string error = LoadError(path);
    CHECK(Contains(error, "variable 'w'"));
    CHECK(Contains(error, "has 41 bytes, meta says (2,5) f32 = 40 bytes (too long)"));
  }
  SUBCASE("missing out") {
    WriteVariable(root, "w", float_2x5, "");
    fs::remove(root / "w" / "out");
    CHECK(Contains(LoadError(path), "no out file"));
  }
  SUBCASE("out that is not a regular file") {
    WriteVariable(root, "w", float_2x5, "");
    fs::remove(root / "w" / "out");
    SUBCASE("folder") { fs::create_directory(root / "w" / "out"); }
    SUBCASE("fifo") { REQUIRE(::mkfifo((root / "w" / "out").c_str(), 0644) == 0); }
    CHECK(Contains(LoadError(path), "is not a regular file"));
  }
  SUBCASE("missing meta without expected specs") {
    WriteVariable(root, "w", "", std::string(40, '\0'), /*with_meta=*/false);
    const std::string error = LoadError(path);
    CHECK(Contains(error, "variable 'w'"));
    CHECK(Contains(error, "no meta file"));
  }
  SUBCASE("bool bytes other than 0 and 1") {
    WriteVariable(root, "mask", "shape { dim: 3 }\ndata_type: kBool\n", std::string("\x01\x07\x00", 3));
    CHECK(Contains(LoadError(path), "holds byte 7 at offset 1, not a bool"));
  }
  CHECK(Leftovers(dir.Path()).empty());
}

TEST_CASE("checkpoint: garbled metas are errors, never crashes") {
  ScratchDir dir;
  const fs::path root = dir.Path() / "ckpt";
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += "a { ";
  const std::string garbage("\x00\xff\xfe{\x01:", 6);
  const std::vector<std::pair<std::string, std::string>> cases{
      {"", "no 'shape' field"},
      {"data_type: kFloat\n", "no 'shape' field"},
      {"shape {\n  dim: 10\n}\n", "no 'data_type' field"},
      {"shape {\n  dim: 10\n", "expected a field name or '}'"},
      {"shape {\n  dim: ten\n}\ndata_type: kFloat\n", "expected a dim at line 2"},
      {"shape {\n  dim: -10\n}\ndata_type: kFloat\n", "negative dim"},
      {"shape {\n  dim: 1.5\n}\ndata_type: kFloat\n", "not a decimal integer"},
      {"shape {\n  dim: 99999999999999999999999\n}\ndata_type: kFloat\n", "out of the int64 range"},
      {"shape { dim: 10 }\nshape { dim: 10 }\ndata_type: kFloat\n", "a second 'shape'"},
      {"shape { dim: 10 }\ndata_type: kFloat\ndata_type: kFloat\n", "a second 'data_type'"},
      {"shape: 10\ndata_type: kFloat\n", "'shape' is not a message"},
      {"shape { dim: 10 }\ndata_type kFloat\n", "expected ':' or '{' after 'data_type'"},
      {"shape { dim: 10 }\ndata_type: \"kFloat\n", "unterminated string"},
      {deep, "nested too deeply"},
      {garbage, "unexpected character 0x00"},
  };
  for (const auto& [meta, expected] : cases) {
    CAPTURE(meta);
    fs::remove_all(root);
    WriteVariable(root, "dense2-bias", meta, std::string(40, '\0'));
    const std::string error = LoadError(root.string());
    CAPTURE(error);
    CHECK(Contains(error, "variable 'dense2-bias'"));
    CHECK(Contains(error, (root / "dense2-bias" / "meta").string()));
    CHECK(Contains(error, "garbled"));
    CHECK(Contains(error, expected));
  }
}

TEST_CASE("checkpoint: unknown and unsupported data_types are named") {
  ScratchDir dir;
  const fs::path root = dir.Path() / "ckpt";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"kFoo", "unknown data_type 'kFoo'"},
      {"42", "unknown data_type '42'"},
      {"kOFRecord", "data_type kOFRecord is not supported by Weir"},
      {"kTensorBuffer", "data_type kTensorBuffer is not supported by Weir"},
      {"10", "data_type kTensorBuffer is not supported by Weir"},  // data_type.proto's number for kTensorBuffer
  };
  for (const auto& [data_type, expected] : cases) {
    CAPTURE(data_type);
    fs::remove_all(root);
    WriteVariable(root, "w", "shape { dim: 10 }\ndata_type: " + data_type + "\n", std::string(40, '\0'));
    const std::string error = LoadError(root.string());
    CHECK(Contains(error, "[checkpoint] variable 'w': meta '" + (root / "w" / "meta").string() + "': " + expected));
  }
}

TEST_CASE("checkpoint: huge dims in a meta are refused before any allocation") {
  ScratchDir dir;
  const fs::path root = dir.Path() / "ckpt";
  SUBCASE("product fits 64 bits but not the file") {
    // 4e18 bytes: allocating first would throw std::bad_alloc instead of this error.
    WriteVariable(root, "w", "shape { dim: 1000000000 dim: 1000000000 }\ndata_type: kFloat\n", std::string(8, '\0'));
    CHECK(Contains(LoadError(root.string()), "has 8 bytes, meta says (1000000000,1000000000) f32 = 4000000000000000000"));
  }
  SUBCASE("product overflows") {
    WriteVariable(root, "w", "shape { dim: 4611686018427387904 dim: 4 }\ndata_type: kDouble\n", std::string(8, '\0'));
    CHECK(Contains(LoadError(root.string()), "more bytes than 64 bits can count"));
  }
  SUBCASE("too many dims") {
    std::string meta = "shape {\n";
    for (int i = 0; i < 100; ++i) meta += "  dim: 1\n";
    WriteVariable(root, "w", meta + "}\ndata_type: kFloat\n", std::string(4, '\0'));
    CHECK(Contains(LoadError(root.string()), "more than 64 dims"));
  }
  SUBCASE("a meta far larger than any real one") {
    WriteVariable(root, "w", std::string(2 << 20, ' '), std::string(4, '\0'));
    CHECK(Contains(LoadError(root.string()), "more than a meta can"));
  }
}

TEST_CASE("checkpoint: metas in other text-format layouts parse") {
  ScratchDir dir;
  const fs::path root = dir.Path() / "ckpt";
  const std::string out(24, '\x01');
  for (const std::string& meta : {
           std::string("shape { dim: 2 dim: 3 } data_type: kInt32"),
           std::string("# written by hand\nshape: {\n  dim: 2,\n  dim: 3;\n}\ndata_type: kInt32\n"),
           std::string("shape < dim: [2, 3] >\ndata_type: 5\n"),
           // Newer OneFlow writes a stride too.
           std::string("shape {\n  dim: 2\n  dim: 3\n}\nstride {\n  dim: 3\n  dim: 1\n}\ndata_type: kInt32\n"),
           std::string("data_type: kInt32 shape { dim: +2 dim: 3 unknown_field: \"x\" } extra: [1.5e-3, abc]"),
       }) {
    CAPTURE(meta);
    fs::remove_all(root);
    WriteVariable(root, "w", meta, out);
    const auto loaded = LoadCheckpoint(root.string());
    REQUIRE(loaded.size() == 1);
    CHECK(loaded.at("w").GetShape() == Shape{2, 3});
    CHECK(loaded.at("w").GetDType() == DType::kI32);
    CHECK(loaded.at("w").ToVector<std::int32_t>() == std::vector<std::int32_t>(6, 0x01010101));
  }
}

TEST_CASE("checkpoint: expected specs load OneFlow 0.2 folders and are checked against metas") {
  ScratchDir dir;
  const fs::path root = dir.Path() / "of02";
  const Tensor weight = Tensor::FromVector<float>(Shape{2, 2}, {1.f, 2.f, 3.f, 4.f});
  const Tensor step = Tensor::Scalar<std::int64_t>(1200);
  // OneFlow 0.2: out files and the marker, no metas.
  WriteVariable(root, "dense1-weight", "", Bytes(weight), /*with_meta=*/false);
  WriteVariable(root, "System-Train-TrainStep-train_job", "", Bytes(step), /*with_meta=*/false);
  const std::map<std::string, TensorSpec> expected{
      {"dense1-weight", {Shape{2, 2}, DType::kF32}},
      {"System-Train-TrainStep-train_job", {Shape{}, DType::kI64}},
      {"dense2-weight", {Shape{3}, DType::kF32}},  // not on disk: CompareCheckpoint's business
  };

  const auto loaded = LoadCheckpoint(root.string(), expected);
  REQUIRE(loaded.size() == 2);
  CHECK(loaded.at("dense1-weight").ToVector<float>() == weight.ToVector<float>());
  CHECK(loaded.at("System-Train-TrainStep-train_job").ToVector<std::int64_t>() == std::vector<std::int64_t>{1200});
  CHECK(Contains(LoadError(root.string()), "no meta file"));

  SUBCASE("a wrong size against an expected spec") {
    std::map<std::string, TensorSpec> wrong = expected;
    wrong["dense1-weight"].shape = Shape{2, 3};
    CHECK(Contains(LoadError(root.string(), wrong),
                   "has 16 bytes, the expected spec says (2,3) f32 = 24 bytes (truncated)"));
  }
  SUBCASE("a folder with neither meta nor spec") {
    WriteVariable(root, "stray", "", "abcd", /*with_meta=*/false);
    const std::string error = LoadError(root.string(), expected);
    CHECK(Contains(error, "variable 'stray'"));
    CHECK(Contains(error, "no meta file"));
  }
  SUBCASE("metas win a disagreement only by raising an error naming both") {
    const fs::path with_meta = dir.Path() / "with_meta";
    SaveCheckpoint(with_meta.string(), {{"dense1-weight", weight}});
    CHECK(LoadCheckpoint(with_meta.string(), expected).size() == 1);

    std::map<std::string, TensorSpec> wrong_shape = expected;
    wrong_shape["dense1-weight"].shape = Shape{4};
    std::string error = LoadError(with_meta.string(), wrong_shape);
    CHECK(Contains(error, "variable 'dense1-weight'"));
    CHECK(Contains(error, "meta '" + (with_meta / "dense1-weight" / "meta").string() + "' says (2,2) f32, expected (4) f32"));

    std::map<std::string, TensorSpec> wrong_dtype = expected;
    wrong_dtype["dense1-weight"].dtype = DType::kI32;
    CHECK(Contains(LoadError(with_meta.string(), wrong_dtype), "says (2,2) f32, expected (2,2) i32"));
  }
}

TEST_CASE("checkpoint: CompareCheckpoint lists missing and unexpected names") {
  const std::map<std::string, Tensor> loaded{
      {"dense1-weight", Tensor::Scalar<float>(1.f)},
      {"dense1-bias", Tensor::Scalar<float>(1.f)},
      {"dense1-weight-momentum", Tensor::Scalar<float>(1.f)},
      {"old-layer", Tensor::Scalar<float>(1.f)},
  };
  const LoadReport report =
      CompareCheckpoint(loaded, {"dense3-weight", "dense1-weight", "dense3-bias", "dense1-bias", "dense3-weight"});
  CHECK(report.missing == std::vector<std::string>{"dense3-weight", "dense3-bias"});
  CHECK(report.unexpected == std::vector<std::string>{"dense1-weight-momentum", "old-layer"});

  const LoadReport nothing_loaded = CompareCheckpoint({}, {"a"});
  CHECK(nothing_loaded.missing == std::vector<std::string>{"a"});
  CHECK(nothing_loaded.unexpected.empty());
  const LoadReport exact = CompareCheckpoint(loaded, {"old-layer", "dense1-weight-momentum", "dense1-bias", "dense1-weight"});
  CHECK(exact.missing.empty());
  CHECK(exact.unexpected.empty());
}
