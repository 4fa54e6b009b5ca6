// The external-producer interface's two HDF5 files (docs/EXTERNAL_PRODUCER.md): the cases file
// the harness writes and the results file an adapter writes. This file only reads, validates and
// writes them. Which cases exist is decided in suites/claims/external_common.cpp
// (write_external_cases), and the judging happens in the ext_* claims.
// Every tensor is raw bits: bf16 as uint16, fp32 as uint32, int8 as int8, indices as int64.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/bf16.h"

namespace fh::ext {

inline constexpr int64_t kInterfaceVersion = 1;

// A validated interface file, held open (defined in external_io.cpp).
struct OpenHdf5File;

// Ranges checked when a file is opened (docs/EXTERNAL_PRODUCER.md), so that every size, divisor
// and loop count a claim derives from a file is known to be sane before any claim runs.
inline constexpr int64_t kMaxDeclaredSplit = 65536;            // order_split_k, order_split_round
inline constexpr int64_t kMaxCaseDim = 2147483647;             // out, in, tokens
inline constexpr int64_t kMaxCaseSteps = 10000;                // steps (forge-verify's --steps limit)
inline constexpr int64_t kMaxDatasetBytes = int64_t(4) << 30;  // any one dataset, read or implied

// A malformed, truncated or mismatched interface file. forge-verify turns it into exit 2.
struct ExternalFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Dtype { bf16, fp32, int8, i64 };
const char* dtype_name(Dtype d);
size_t dtype_bytes(Dtype d);
Dtype dtype_of_storage(const std::string& name);  // "bf16" / "fp32" / "int8"; throws otherwise

struct Tensor {
  Dtype dtype = Dtype::fp32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t numel() const;
  // Element k as a float (bf16 widened, fp32 as stored, int8 as its integer).
  float value(int64_t k) const;
  // Element k's raw bits, zero-extended (int8: the byte).
  uint32_t bits(int64_t k) const;
  int64_t i64(int64_t k) const;
  // A slice along the first axis: [index, ...] as its own tensor.
  Tensor slab(int64_t index) const;
  std::vector<float> floats() const;
  std::vector<bf16> bf16s() const;  // bf16 only
  std::vector<uint8_t> u8() const;    // int8 only (bytes)

  static Tensor make(Dtype d, std::vector<int64_t> shape);
  static Tensor from_floats(Dtype d, std::vector<int64_t> shape, const std::vector<float>& v);  // bf16: RNE
  static Tensor from_bf16s(std::vector<int64_t> shape, const std::vector<bf16>& v);
  static Tensor from_i64(const std::vector<int64_t>& v);
};

// One case's attributes (the tensors are read on demand, from the file held open since it was
// validated: a probe case can be hundreds of MB).
struct CaseSpec {
  std::string id, kind;  // kind: order_probe, adamw, adamw_int8
  int64_t out = 0, in = 0, tokens = 0, steps = 1;
  std::string weight_dtype = "bf16", state_dtype = "none";
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  int64_t first_step = 1, qblock = 0;
  std::string g_order;
};

struct CasesHeader {
  std::string cases_id, case_set, harness_revision;
  int64_t seed = 0;
};

// The datasets a case of this spec carries in the cases file, with dtype and shape.
struct DatasetSpec {
  std::string name;
  Dtype dtype;
  std::vector<int64_t> shape;
};
std::vector<DatasetSpec> case_inputs(const CaseSpec& c);
// The datasets a results file must hold for an "ok" case of this spec; `G` is optional for
// adamw kinds and listed with optional = true.
struct ResultDatasetSpec : DatasetSpec {
  bool optional = false;
};
std::vector<ResultDatasetSpec> case_outputs(const CaseSpec& c);

class CasesFile {
 public:
  // Opens and validates the file: interface version, kind, every case's attributes and every
  // input dataset's type and shape. Throws ExternalFileError naming the file and object. The
  // file stays open: load() reads through that handle, never through the path again.
  explicit CasesFile(std::string path);
  const std::string& path() const { return path_; }
  const CasesHeader& header() const { return header_; }
  const std::vector<CaseSpec>& cases() const { return cases_; }
  const CaseSpec* find(const std::string& id) const;
  Tensor load(const std::string& case_id, const std::string& name) const;

 private:
  std::string path_;
  CasesHeader header_;
  std::vector<CaseSpec> cases_;
  std::shared_ptr<const OpenHdf5File> file_;
};

struct ResultCase {
  std::string id, status, error, detail;  // status: ok, failed, unsupported
};

struct DeclaredOrder {
  std::string model;  // "", "mma_chain", "fp32_sequential"
  int64_t k_group = 16, split_k = 1, split_round = 16;
  std::string describe() const;
};

class ResultsFile {
 public:
  // Opens and validates the results against `cases`: interface version, cases_id, required
  // root attributes, every case's status, and for every "ok" case every required dataset's
  // type and shape, each read in full (so a truncated file is refused here, not mid-claim). The
  // file stays open: has() and load() read through that handle, never through the path again.
  ResultsFile(std::string path, const CasesFile& cases);
  const std::string& path() const { return path_; }
  const std::string& producer() const { return producer_; }
  const std::string& path_name() const { return path_name_; }
  const std::string& role() const { return role_; }  // fused, two_phase, reference
  const DeclaredOrder& order() const { return order_; }
  const std::map<std::string, std::string>& meta() const { return meta_; }
  const std::vector<ResultCase>& cases() const { return cases_; }
  const ResultCase* find(const std::string& id) const;
  bool has(const std::string& case_id, const std::string& name) const;
  Tensor load(const std::string& case_id, const std::string& name) const;

 private:
  std::string path_, producer_, path_name_, role_;
  DeclaredOrder order_;
  std::map<std::string, std::string> meta_;
  std::vector<ResultCase> cases_;
  std::shared_ptr<const OpenHdf5File> file_;
};

// Writes a cases file through a temporary file in the same folder (renamed at the end; removed
// on failure). `tensors` runs once per case and returns its inputs by name (checked against
// case_inputs).
void write_cases_file(const std::string& path, const CasesHeader& header, const std::vector<CaseSpec>& cases,
                      const std::function<std::map<std::string, Tensor>(const CaseSpec&)>& tensors);

// Writes a results file the same way (for C++ producers and the suites' planted files).
struct ResultsHeader {
  std::string cases_id, producer, path, role;
  DeclaredOrder order;
  std::map<std::string, std::string> meta;
};
struct ResultCaseOut {
  std::string id, status = "ok", error, detail;
  std::map<std::string, Tensor> data;
};
void write_results_file(const std::string& path, const ResultsHeader& header, const std::vector<ResultCaseOut>& cases);

}  // namespace fh::ext
