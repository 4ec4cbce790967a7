// Writes small GGUF files for the tests: the layout of ggml's gguf.cpp (version 3, little-endian,
// 32-byte alignment), metadata and tensor infos, then each tensor's bytes (zeros), so that the
// file is one llama.cpp's reader would take apart the same way.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "workloads/gguf.h"

namespace vramsim::test {

class GgufWriter {
 public:
  GgufWriter& u32(const std::string& key, std::uint32_t v) { return pair(key, 4, &v, 4); }
  GgufWriter& f32(const std::string& key, float v) { return pair(key, 6, &v, 4); }
  GgufWriter& text(const std::string& key, const std::string& v) {
    std::string body = str(v);
    return pair(key, 8, body.data(), body.size());
  }
  GgufWriter& i32_array(const std::string& key, const std::vector<std::int32_t>& v) {
    std::string body;
    put(body, std::uint32_t{5});
    put(body, static_cast<std::uint64_t>(v.size()));
    for (auto x : v) put(body, x);
    return pair(key, 9, body.data(), body.size());
  }
  GgufWriter& strings(const std::string& key, const std::vector<std::string>& v) {
    std::string body;
    put(body, std::uint32_t{8});
    put(body, static_cast<std::uint64_t>(v.size()));
    for (const auto& s : v) body += str(s);
    return pair(key, 9, body.data(), body.size());
  }
  // `dims` in ggml order (row length first); `type` a ggml type id.
  GgufWriter& tensor(const std::string& name, const std::vector<std::int64_t>& dims, std::uint32_t type) {
    const auto t = workloads::ggml_type(type);
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    tensors_.push_back({name, dims, type, static_cast<std::uint64_t>(n / t->block_weights * t->block_bytes)});
    return *this;
  }
  // Elements and bytes of what was added so far.
  double bytes() const {
    double b = 0;
    for (const auto& t : tensors_) b += static_cast<double>(t.bytes);
    return b;
  }

  // The header only (`truncate_at` > 0: its first bytes), or the whole file.
  std::string header() const {
    std::string out = "GGUF";
    put(out, std::uint32_t{3});
    put(out, static_cast<std::uint64_t>(tensors_.size()));
    put(out, static_cast<std::uint64_t>(pairs_));
    out += kv_;
    std::uint64_t offset = 0;
    for (const auto& t : tensors_) {
      out += str(t.name);
      put(out, static_cast<std::uint32_t>(t.dims.size()));
      for (auto d : t.dims) put(out, static_cast<std::uint64_t>(d));
      put(out, t.type);
      put(out, offset);
      offset += (t.bytes + 31) / 32 * 32;
    }
    return out;
  }
  void write(const std::filesystem::path& path) const {
    std::string out = header();
    out.resize((out.size() + 31) / 32 * 32, '\0');
    for (const auto& t : tensors_) out.resize(out.size() + (t.bytes + 31) / 32 * 32, '\0');
    std::ofstream(path, std::ios::binary).write(out.data(), static_cast<std::streamsize>(out.size()));
  }

 private:
  struct Tensor {
    std::string name;
    std::vector<std::int64_t> dims;
    std::uint32_t type;
    std::uint64_t bytes;
  };
  template <class T>
  static void put(std::string& out, T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  static std::string str(const std::string& s) {
    std::string out;
    put(out, static_cast<std::uint64_t>(s.size()));
    return out + s;
  }
  GgufWriter& pair(const std::string& key, std::uint32_t type, const void* body, std::size_t n) {
    kv_ += str(key);
    put(kv_, type);
    kv_.append(static_cast<const char*>(body), n);
    ++pairs_;
    return *this;
  }
  std::string kv_;
  std::size_t pairs_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace vramsim::test
