// The HDF5 plumbing shared by the report writer and reader (declared in hdf5_util.h).
#include "reports/hdf5_util.h"

#include <string>
#include <vector>

namespace fh::report_detail {

std::mutex& h5_mutex() {
  static std::mutex m;
  return m;
}

std::string hdf5_error_text() {
  std::vector<std::string> lines;
  auto walk = [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
    auto* v = static_cast<std::vector<std::string>*>(out);
    v->push_back(std::string(e->func_name ? e->func_name : "?") + ": " +
                 (e->desc ? e->desc : ""));
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk, &lines);
  if (lines.empty()) return "HDF5 call failed";
  std::string s = lines.front();
  if (lines.size() > 1) s += " <- " + lines.back();
  return s;
}

Handle make_fapl() {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.valid()) return fapl;
  // Strong close: closing the file releases everything in it, so a failed write can be removed.
  H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
#if H5_VERSION_GE(1, 10, 7)
  // The temporary file is private; locking only adds failures on filesystems without locks.
  H5Pset_file_locking(fapl, false, true);
#endif
  return fapl;
}

}  // namespace fh::report_detail
