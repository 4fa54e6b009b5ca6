// The HDF5 plumbing every HDF5 reader and writer of the process shares (the input layer's
// producer files, the report's writer and reader), defined once in hdf5_util.cpp: the one mutex
// that serialises all HDF5 use, the scope that silences HDF5's error printing, the RAII handle,
// the error-stack text, the file access properties and the foreign-data check of an input.
#pragma once
#include <hdf5.h>

#include <mutex>
#include <string>
#include <utility>

namespace fh::hdf5_detail {

// Every HDF5 call in the process runs under this lock: the serial HDF5 library is not
// thread-safe.
std::mutex& h5_mutex();

// Turns HDF5's automatic stack printing off for the scope, restores the caller's setting after.
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// Owns one HDF5 identifier.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      close_ = o.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now and reports the status; the file's close is where buffered writes can fail.
  herr_t close() {
    herr_t rc = 0;
    if (id_ >= 0 && close_) rc = close_(id_);
    id_ = H5I_INVALID_HID;
    return rc;
  }

 private:
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// The current HDF5 error stack, API call first and innermost cause last, in one line. Must run
// right after the failing call: the next API call clears the stack.
std::string hdf5_error_text();

// File access properties for reading and writing: strong close, no file locking.
Handle make_fapl();

// Where an input file would reach outside itself: an external or user-defined link, a soft link
// that resolves to nothing, a dataset whose data lives in other files (external storage, a
// virtual dataset). "" when all it holds is its own, else "<object>: <what>". Reads links and
// creation properties only, so nothing is followed; call right after opening, under QuietHdf5.
std::string foreign_data_problem(hid_t file);

}  // namespace fh::hdf5_detail
