#include "workloads/gguf.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "core/config_reader.h"

namespace vramsim::workloads {
namespace {

// ggml.h enum ggml_type, with each type's block (ggml.c type_traits; sizes from ggml-common.h's
// static_asserts). Ids 4, 5 and 31-33, 36-38 were removed from ggml and are in no GGUF file.
struct TypeRow {
  std::uint32_t id;
  GgmlType type;
};
constexpr std::array kTypes = {
    TypeRow{0, {"F32", 1, 4}},          TypeRow{1, {"F16", 1, 2}},         TypeRow{2, {"Q4_0", 32, 18}},
    TypeRow{3, {"Q4_1", 32, 20}},       TypeRow{6, {"Q5_0", 32, 22}},      TypeRow{7, {"Q5_1", 32, 24}},
    TypeRow{8, {"Q8_0", 32, 34}},       TypeRow{9, {"Q8_1", 32, 36}},      TypeRow{10, {"Q2_K", 256, 84}},
    TypeRow{11, {"Q3_K", 256, 110}},    TypeRow{12, {"Q4_K", 256, 144}},   TypeRow{13, {"Q5_K", 256, 176}},
    TypeRow{14, {"Q6_K", 256, 210}},    TypeRow{15, {"Q8_K", 256, 292}},   TypeRow{16, {"IQ2_XXS", 256, 66}},
    TypeRow{17, {"IQ2_XS", 256, 74}},   TypeRow{18, {"IQ3_XXS", 256, 98}}, TypeRow{19, {"IQ1_S", 256, 50}},
    TypeRow{20, {"IQ4_NL", 32, 18}},    TypeRow{21, {"IQ3_S", 256, 110}},  TypeRow{22, {"IQ2_S", 256, 82}},
    TypeRow{23, {"IQ4_XS", 256, 136}},  TypeRow{24, {"I8", 1, 1}},         TypeRow{25, {"I16", 1, 2}},
    TypeRow{26, {"I32", 1, 4}},         TypeRow{27, {"I64", 1, 8}},        TypeRow{28, {"F64", 1, 8}},
    TypeRow{29, {"IQ1_M", 256, 56}},    TypeRow{30, {"BF16", 1, 2}},       TypeRow{34, {"TQ1_0", 256, 54}},
    TypeRow{35, {"TQ2_0", 256, 66}},    TypeRow{39, {"MXFP4", 32, 17}},    TypeRow{40, {"NVFP4", 64, 36}},
    TypeRow{41, {"Q1_0", 128, 18}},     TypeRow{42, {"Q2_0", 64, 18}},
};

// gguf.h enum gguf_type.
enum ValueType : std::uint32_t { U8, I8, U16, I16, U32, I32, F32, Bool, String, Array, U64, I64, F64, kValueTypes };
constexpr std::array<int, kValueTypes> kScalarBytes = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Reader {
 public:
  Reader(std::istream& in, std::uint64_t size, std::string path) : in_(in), size_(size), path_(std::move(path)) {}

  std::uint64_t offset() const { return offset_; }
  std::uint64_t left() const { return size_ - offset_; }
  // `what` is being read at the current offset; `context` names the key or tensor.
  [[noreturn]] void fail(const std::string& what) const {
    throw Malformed(path_ + ": at byte " + std::to_string(offset_) + (context_.empty() ? "" : " (" + context_ + ")") + ": " + what);
  }
  void set_context(std::string c) { context_ = std::move(c); }

  void read(void* out, std::uint64_t n, const char* what) {
    if (n > left()) fail(std::string("the file ends inside ") + what + " (" + std::to_string(n) + " bytes needed, " +
                         std::to_string(left()) + " left): a truncated download?");
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
    if (!in_) fail(std::string("cannot read ") + what);
    offset_ += n;
  }
  void skip(std::uint64_t n, const char* what) {
    if (n > left()) fail(std::string("the file ends inside ") + what);
    in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
    if (!in_) fail(std::string("cannot read ") + what);
    offset_ += n;
  }
  // GGUF is little-endian, as every host this builds for (the static_assert above).
  template <class T>
  T scalar(const char* what) {
    T out;
    read(&out, sizeof(T), what);
    return out;
  }
  std::uint64_t length(const char* what) {
    const auto n = scalar<std::uint64_t>(what);
    if (n > left()) fail(std::string(what) + " of " + std::to_string(n) + " is more than the " + std::to_string(left()) + " bytes left");
    return n;
  }
  std::string string(const char* what) {
    std::string s(length(what), '\0');
    if (!s.empty()) read(s.data(), s.size(), what);
    return s;
  }

 private:
  std::istream& in_;
  std::uint64_t size_;
  std::uint64_t offset_ = 0;
  std::string path_;
  std::string context_;
};

double number_of(Reader& r, std::uint32_t type, bool& integer) {
  integer = type != F32 && type != F64;
  switch (type) {
    case Bool: return r.scalar<std::uint8_t>("a bool") != 0 ? 1.0 : 0.0;
    case U8: return r.scalar<std::uint8_t>("a u8");
    case I8: return r.scalar<std::int8_t>("an i8");
    case U16: return r.scalar<std::uint16_t>("a u16");
    case I16: return r.scalar<std::int16_t>("an i16");
    case U32: return r.scalar<std::uint32_t>("a u32");
    case I32: return r.scalar<std::int32_t>("an i32");
    case F32: return r.scalar<float>("an f32");
    case U64: return static_cast<double>(r.scalar<std::uint64_t>("a u64"));
    case I64: return static_cast<double>(r.scalar<std::int64_t>("an i64"));
    default: return r.scalar<double>("an f64");
  }
}

GgufValue value_of(Reader& r, std::uint32_t type) {
  GgufValue v;
  if (type >= kValueTypes) r.fail("unknown value type " + std::to_string(type) + " (GGUF has types 0-12)");
  if (type == String) {
    v.kind = GgufValue::Kind::String;
    v.text = r.string("a string");
  } else if (type == Bool) {
    v.kind = GgufValue::Kind::Bool;
    const auto b = r.scalar<std::uint8_t>("a bool");
    if (b > 1) r.fail("a bool of " + std::to_string(b) + " (0 or 1 expected)");
    v.flag = b == 1;
  } else if (type == Array) {
    v.kind = GgufValue::Kind::Array;
    v.element_type = r.scalar<std::uint32_t>("an array's element type");
    if (v.element_type >= kValueTypes || v.element_type == Array)
      r.fail("array element type " + std::to_string(v.element_type) + " (GGUF arrays hold types 0-8, 10-12)");
    v.length = r.scalar<std::uint64_t>("an array's length");
    if (v.element_type == String) {
      // Each string is at least its 8-byte length: a count beyond that is no file's.
      if (v.length > r.left() / 8) r.fail("an array of " + std::to_string(v.length) + " strings in " + std::to_string(r.left()) + " bytes");
      for (std::uint64_t i = 0; i < v.length; ++i) r.skip(r.length("a string's length"), "a string");
    } else {
      const std::uint64_t width = static_cast<std::uint64_t>(kScalarBytes[v.element_type]);
      if (v.length > r.left() / width) r.fail("an array of " + std::to_string(v.length) + " elements in " + std::to_string(r.left()) + " bytes");
      if (v.length > kKeptArrayElements) {
        r.skip(v.length * width, "an array");
      } else {
        v.numbers.reserve(v.length);
        bool integer = false;
        for (std::uint64_t i = 0; i < v.length; ++i) v.numbers.push_back(number_of(r, v.element_type, integer));
        v.integer = integer;
      }
    }
  } else {
    v.number = number_of(r, type, v.integer);
  }
  return v;
}

GgufHeader parse(Reader& r) {
  GgufHeader h;
  char magic[4];
  r.read(magic, 4, "the magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) r.fail("not a GGUF file (it does not start with \"GGUF\")");
  h.version = r.scalar<std::uint32_t>("the version");
  if ((h.version & 0xFFFFu) == 0 && h.version != 0)
    r.fail("a big-endian GGUF file (version bytes " + std::to_string(h.version) + "): only little-endian files are read");
  if (h.version == 1) r.fail("GGUF version 1 (2023, 32-bit counts): convert the model again with a current llama.cpp");
  if (h.version < 2 || h.version > 3) r.fail("GGUF version " + std::to_string(h.version) + " (versions 2 and 3 are read)");
  const auto tensors = r.scalar<std::uint64_t>("the tensor count");
  const auto pairs = r.scalar<std::uint64_t>("the metadata count");
  // A pair is at least 12 bytes (key length, type), a tensor's info at least 24.
  if (pairs > r.left() / 12) r.fail(std::to_string(pairs) + " metadata pairs in " + std::to_string(r.left()) + " bytes");
  if (tensors > r.left() / 24) r.fail(std::to_string(tensors) + " tensors in " + std::to_string(r.left()) + " bytes");
  for (std::uint64_t i = 0; i < pairs; ++i) {
    r.set_context("metadata pair " + std::to_string(i));
    std::string key = r.string("a metadata key");
    r.set_context("metadata key \"" + key + "\"");
    const auto type = r.scalar<std::uint32_t>("the value type");
    GgufValue v = value_of(r, type);
    if (!h.metadata.emplace(key, std::move(v)).second) r.fail("a second value for the key");
  }
  h.tensors.reserve(tensors);
  for (std::uint64_t i = 0; i < tensors; ++i) {
    r.set_context("tensor " + std::to_string(i));
    GgufTensor t;
    t.name = r.string("a tensor name");
    r.set_context("tensor \"" + t.name + "\"");
    const auto n_dims = r.scalar<std::uint32_t>("the dimension count");
    if (n_dims < 1 || n_dims > 4) r.fail(std::to_string(n_dims) + " dimensions (ggml tensors have 1 to 4)");
    t.elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto n = r.scalar<std::uint64_t>("a dimension");
      if (n == 0 || n > (std::uint64_t{1} << 40)) r.fail("a dimension of " + std::to_string(n));
      t.dims.push_back(static_cast<std::int64_t>(n));
      t.elements *= static_cast<double>(n);
    }
    t.type = r.scalar<std::uint32_t>("the tensor type");
    const auto type = ggml_type(t.type);
    if (!type) r.fail("unknown ggml type " + std::to_string(t.type) + " (a newer llama.cpp's? this reader knows ggml's types to 42)");
    if (t.dims[0] % type->block_weights != 0)
      r.fail("a row of " + std::to_string(t.dims[0]) + " weights in " + type->name + " blocks of " + std::to_string(type->block_weights));
    t.bytes = t.elements / static_cast<double>(type->block_weights) * static_cast<double>(type->block_bytes);
    r.scalar<std::uint64_t>("the tensor's data offset");
    h.tensors.push_back(std::move(t));
  }
  return h;
}

}  // namespace

std::optional<GgmlType> ggml_type(std::uint32_t id) {
  for (const auto& row : kTypes)
    if (row.id == id) return row.type;
  return std::nullopt;
}

Result<GgufHeader> read_gguf_header(std::istream& in, std::uint64_t size, const std::string& path) {
  Reader r(in, size, path);
  try {
    return parse(r);
  } catch (const Malformed& e) {
    return Error{e.what()};
  }
}

Result<GgufHeader> read_gguf_header(const std::string& path) {
  // A model file is gigabytes; only its header is read.
  if (auto ok = config::check_input_file(path, std::uintmax_t{1} << 50); !ok) return ok.error();
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return Error{path + ": error: cannot open file"};
  const auto size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  return read_gguf_header(in, size, path);
}

}  // namespace vramsim::workloads
