// The HDF5 plumbing shared by every HDF5 reader and writer (declared in hdf5_util.h).
#include "inputs/hdf5_util.h"

#include <string>
#include <vector>

namespace fh::hdf5_detail {

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

namespace {

// A soft or external link's stored value (val_size bytes), read without resolving the link.
std::vector<char> link_value(hid_t root, const char* name, size_t size) {
  std::vector<char> val(size + 1, '\0');
  if (H5Lget_val(root, name, val.data(), size, H5P_DEFAULT) < 0) val.assign(1, '\0');
  return val;
}

}  // namespace

std::string foreign_data_problem(hid_t file) {
  struct Walk {
    std::string problem;
    std::vector<std::pair<std::string, std::string>> soft;  // (link, target): resolved after the walk
  } w;
  // `name` is relative to the root. H5Lvisit descends hard links only: every link is seen, none
  // is resolved.
  auto cb = [](hid_t root, const char* name, const H5L_info_t* info, void* data) -> herr_t {
    auto* w = static_cast<Walk*>(data);
    const std::string at = std::string("/") + name;
    if (info->type == H5L_TYPE_SOFT) {
      w->soft.emplace_back(at, link_value(root, name, info->u.val_size).data());
      return 0;
    }
    if (info->type == H5L_TYPE_EXTERNAL) {
      const std::vector<char> val = link_value(root, name, info->u.val_size);
      unsigned flags = 0;
      const char *f = nullptr, *o = nullptr;
      const bool named = H5Lunpack_elink_val(val.data(), info->u.val_size, &flags, &f, &o) >= 0 && f && o;
      w->problem = at + ": is an external link to " + (named ? "'" + std::string(f) + ":" + o + "'" : "another file") +
                   ", never followed (a file's data must be its own)";
      return 1;
    }
    if (info->type != H5L_TYPE_HARD) {
      w->problem = at + ": is a user-defined link, never followed";
      return 1;
    }
    Handle obj(H5Oopen(root, name, H5P_DEFAULT), H5Oclose);
    if (!obj.valid() || H5Iget_type(obj) != H5I_DATASET) return 0;  // only a dataset holds data
    Handle dcpl(H5Dget_create_plist(obj), H5Pclose);
    if (!dcpl.valid()) w->problem = at + ": cannot read its creation properties: " + hdf5_error_text();
    else if (H5Pget_layout(dcpl) == H5D_VIRTUAL)
      w->problem = at + ": is a virtual dataset (its data lives in other files), never read";
    else if (H5Pget_external_count(dcpl) != 0)
      w->problem = at + ": keeps its data in external files, never read (a file's data must be its own)";
    return w->problem.empty() ? 0 : 1;
  };
  Handle root(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose);
  if (!root.valid()) return "/: cannot open the root group: " + hdf5_error_text();
  const herr_t rc = H5Lvisit(root, H5_INDEX_NAME, H5_ITER_INC, cb, &w);
  if (!w.problem.empty()) return w.problem;
  if (rc < 0) return "/: cannot list the file's links: " + hdf5_error_text();
  // No link leads out of the file now, so resolving a soft link stays inside it (a loop fails).
  for (const auto& [at, target] : w.soft)
    if (H5Oexists_by_name(root, at.c_str(), H5P_DEFAULT) <= 0)
      return at + ": is a soft link to '" + target + "', which resolves to no object";
  return {};
}

}  // namespace fh::hdf5_detail
