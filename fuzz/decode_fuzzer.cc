// decode_fuzzer: proto::Decode on arbitrary bytes (docs/fuzzing.md).
//
// Two directions per input:
//  1. Decode the input as a datagram. The verdict must be the one the
//     protocol page gives (fuzz/reference_parse.h); a packet it accepts must
//     read back field by field, re-encode (EncodeHeader, Encode) to the very
//     same bytes, and have length 24 + 4·count. ASan catches any read past
//     the datagram: libFuzzer hands over a heap buffer of exactly its size.
//  2. Encode a header and values taken from the input, then decode the
//     result: every op in 1..10 must come back unchanged, any other op must
//     be refused as bad_op.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "fuzz/reference_parse.h"
#include "proto/codec.h"

namespace serene::fuzz {
namespace {

#define DECODE_CHECK(cond)                                                           \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "decode_fuzzer: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

bool SameHeader(const proto::Header& a, const proto::Header& b) {
  return a.op == b.op && a.job == b.job && a.worker == b.worker && a.key == b.key &&
         a.clock == b.clock && a.row == b.row && a.count == b.count && a.flags == b.flags;
}

uint32_t Be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

void CheckDecode(const uint8_t* data, size_t size) {
  proto::PacketView v;
  const proto::ParseError err = proto::Decode(data, size, &v);
  DECODE_CHECK(err == ReferenceParse(data, size));
  DECODE_CHECK(proto::ParseErrorName(err) != "unknown");
  if (err != proto::ParseError::kOk) return;

  const proto::Header& h = v.header;
  DECODE_CHECK(size == proto::PacketSize(h.count));
  DECODE_CHECK(size == 24 + 4 * size_t{h.count});
  DECODE_CHECK(static_cast<uint8_t>(h.op) == data[3]);
  DECODE_CHECK(h.job == Be16(data + 4) && h.worker == Be16(data + 6));
  DECODE_CHECK(h.key == Be32(data + 8) && h.clock == Be32(data + 12) && h.row == Be32(data + 16));
  DECODE_CHECK(h.count == Be16(data + 20) && h.flags == Be16(data + 22));
  DECODE_CHECK(proto::IsRequest(h.op) == ReferenceIsRequest(data[3]));
  DECODE_CHECK(proto::OpName(h.op) != "UNKNOWN");
  DECODE_CHECK(v.values == data + proto::kHeaderSize);

  std::vector<int32_t> values(h.count);
  for (size_t i = 0; i < h.count; ++i) {
    values[i] = v.Value(i);
    DECODE_CHECK(static_cast<uint32_t>(values[i]) == Be32(data + 24 + 4 * i));
  }
  std::vector<uint8_t> header(proto::kHeaderSize);
  proto::EncodeHeader(h, header.data());
  DECODE_CHECK(std::equal(header.begin(), header.end(), data));
  std::vector<uint8_t> again(proto::PacketSize(values.size()));
  DECODE_CHECK(proto::Encode(h, values, again.data()) == size);
  DECODE_CHECK(std::equal(again.begin(), again.end(), data));

  // One byte less is never a packet.
  proto::PacketView shorter;
  DECODE_CHECK(proto::Decode(data, size - 1, &shorter) != proto::ParseError::kOk);
}

void CheckEncode(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  proto::Header h;
  const uint8_t op = in.U8();
  h.op = static_cast<proto::Op>(op);
  h.job = in.U16();
  h.worker = in.U16();
  h.key = in.U32();
  h.clock = in.U32();
  h.row = in.U32();
  h.count = in.U16();  // Encode sets it from the values
  h.flags = in.U16();
  std::vector<int32_t> values(std::min(in.remaining() / 4, proto::kMaxValues));
  for (int32_t& x : values) x = static_cast<int32_t>(in.U32());

  std::vector<uint8_t> buf(proto::PacketSize(values.size()));
  DECODE_CHECK(proto::Encode(h, values, buf.data()) == buf.size());
  proto::PacketView v;
  const proto::ParseError err = proto::Decode(buf.data(), buf.size(), &v);
  if (op < proto::kMinOp || op > proto::kMaxOp) {
    DECODE_CHECK(err == proto::ParseError::kBadOp);
    return;
  }
  DECODE_CHECK(err == proto::ParseError::kOk);
  h.count = static_cast<uint16_t>(values.size());
  DECODE_CHECK(SameHeader(v.header, h));
  for (size_t i = 0; i < values.size(); ++i) DECODE_CHECK(v.Value(i) == values[i]);
}

}  // namespace
}  // namespace serene::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  serene::fuzz::CheckDecode(data, size);
  serene::fuzz::CheckEncode(data, size);
  return 0;
}
