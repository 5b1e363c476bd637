#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "engine/safetensors.h"

using namespace electra;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("electra_st_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary);
  out << s;
}

// A hand-built file: header JSON `json` followed by `data`.
std::string raw_file(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + json + data;
}

}  // namespace

TEST_CASE("safetensors round-trips tensors, dtypes and metadata", "[safetensors]") {
  const fs::path path = temp_dir() / "model.safetensors";
  std::vector<float> w = {1.5f, -2.0f, 3.25f, 0.125f, 7.0f, -0.5f};
  std::vector<double> d = {3.0, -1.0};
  std::vector<bf16> b = {float_to_bf16(1.0f), float_to_bf16(-3.5f), float_to_bf16(0.25f)};
  write_safetensors(path.string(),
                    {{"electra.w", Tensor::view_of(w.data(), Device::CPU, {2, 3})},
                     {"d", Tensor::view_of(d.data(), Device::CPU, {2})},
                     {"b", Tensor::view_of(b.data(), Device::CPU, {3})}},
                    {{"format", "pt"}});
  const SafetensorsFile file = SafetensorsFile::read(path.string());
  REQUIRE(file.entries().size() == 3);
  CHECK(file.metadata().at("format") == "pt");
  const SafetensorsEntry* e = file.find("electra.w");
  REQUIRE(e != nullptr);
  CHECK(e->dtype == "F32");
  CHECK(e->shape == std::vector<int64_t>{2, 3});
  std::vector<float> back(6);
  file.read_f32(*e, back.data());
  CHECK(back == w);
  std::vector<float> b_back(3), d_back(2);
  file.read_f32(*file.find("b"), b_back.data());
  file.read_f32(*file.find("d"), d_back.data());
  CHECK(b_back == std::vector<float>{1.0f, -3.5f, 0.25f});
  CHECK(d_back == std::vector<float>{3.0f, -1.0f});
  CHECK(file.find("missing") == nullptr);
  // The header is padded so the data starts 8-byte aligned, as the format recommends.
  CHECK((slurp(path).size() - 6 * 4 - 2 * 8 - 3 * 2) % 8 == 0);
}

TEST_CASE("safetensors reads F16 (as written by HF in half precision)", "[safetensors]") {
  const fs::path path = temp_dir() / "half.safetensors";
  // 1.0 = 0x3c00, -2.5 = 0xc100, 2^-24 (smallest subnormal) = 0x0001
  const std::string data = std::string("\x00\x3c\x00\xc1\x01\x00", 6);
  spit(path, raw_file(R"({"h":{"dtype":"F16","shape":[3],"data_offsets":[0,6]}})", data));
  const SafetensorsFile file = SafetensorsFile::read(path.string());
  std::vector<float> out(3);
  file.read_f32(*file.find("h"), out.data());
  CHECK(out == std::vector<float>{1.0f, -2.5f, 0x1.0p-24f});
}

TEST_CASE("malformed safetensors files are user errors naming the file and tensor",
          "[safetensors]") {
  const fs::path path = temp_dir() / "bad.safetensors";
  const std::string name = path.string();
  auto expect_error = [&](const std::string& contents, const std::string& fragment) {
    spit(path, contents);
    CHECK_THROWS_WITH(SafetensorsFile::read(name),
                      Catch::Contains(name) && Catch::Contains(fragment));
  };
  expect_error("abc", "too short");
  expect_error(raw_file("{not json", ""), "not JSON");
  expect_error(
      raw_file(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::string(8, '\0')),
      "tensor 't': data [0, 16) outside the 8 bytes");
  expect_error(
      raw_file(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')),
      "8 bytes for 3 F32 values");
  expect_error(
      raw_file(R"({"t":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})", std::string(1, '\0')),
      "unknown dtype 'Q7'");
  expect_error(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                        std::string(12, '\0')),
               "overlap");
  std::string huge(8, '\xff');
  expect_error(huge + "{}", "header size");
  // 2^40 x 2^40 F32 values: the count would wrap to 0 and match the empty data range.
  expect_error(raw_file(R"({"t":{"dtype":"F32","shape":[1099511627776,1099511627776],)"
                        R"("data_offsets":[0,0]}})",
                        ""),
               "tensor 't': shape has more elements than fit in 63 bits");
  // 2^62 F32 values: the count fits, the byte size does not.
  expect_error(raw_file(R"({"t":{"dtype":"F32","shape":[4611686018427387904],)"
                        R"("data_offsets":[0,0]}})",
                        ""),
               "byte size overflows");
  CHECK_THROWS_WITH(SafetensorsFile::read(name + ".missing"), Catch::Contains("cannot open"));
}

TEST_CASE("a failed write leaves the previous file untouched and no temporary behind",
          "[safetensors]") {
  const fs::path dir = temp_dir() / "atomic";
  fs::create_directories(dir);
  const fs::path path = dir / "ckpt.safetensors";
  std::vector<float> v = {1, 2, 3};
  write_safetensors(path.string(), {{"v", Tensor::view_of(v.data(), Device::CPU, {3})}});
  const std::string before = slurp(path);
  // A missing directory, then a directory squatting on the temporary file name: both fail.
  CHECK_THROWS_WITH(write_file_atomic((dir / "missing" / "x").string(), "data"),
                    Catch::Contains("does not exist"));
  fs::create_directories(path.string() + ".tmp." + std::to_string(::getpid()));
  CHECK_THROWS_WITH(write_safetensors(path.string(), {}), Catch::Contains("cannot create"));
  fs::remove(path.string() + ".tmp." + std::to_string(::getpid()));
  CHECK(slurp(path) == before);
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) files += entry.is_regular_file();
  CHECK(files == 1);
}

TEST_CASE("require_finite names the file, tensor and index of a NaN or Inf", "[safetensors]") {
  const std::vector<float> good{1, -2, 0};
  CHECK_NOTHROW(require_finite("m.safetensors", "w", good.data(), 3));
  const std::vector<float> bad{1, std::nanf(""), 0};
  CHECK_THROWS_WITH(require_finite("m.safetensors", "w", bad.data(), 3),
                    Catch::StartsWith("m.safetensors: tensor 'w' holds a non-finite value") &&
                        Catch::Contains("at index 1"));
  const std::vector<float> inf{-INFINITY};
  CHECK_THROWS_AS(require_finite("m.safetensors", "w", inf.data(), 1), UserError);
}
