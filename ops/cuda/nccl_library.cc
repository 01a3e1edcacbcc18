// NcclLibrary: dlopen of libnccl.so.2 and its entry points (see the header).
#include "tandem/ops/cuda/nccl_library.h"

#include <dlfcn.h>

#include <type_traits>

namespace tandem::ops {

const NcclLibrary& NcclLibrary::get() {
  static const NcclLibrary library;
  return library;
}

NcclLibrary::NcclLibrary() {
  void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    unavailable_ = std::string("libnccl.so.2 could not be loaded (") +
                   (why != nullptr ? why : "no reason given") + ")";
    return;
  }
  const auto resolve = [&](auto& entry, const char* name) {
    entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(dlsym(handle, name));
    if (entry == nullptr && unavailable_.empty()) {
      unavailable_ = std::string("libnccl.so.2 has no ") + name;
    }
  };
  resolve(get_version, "ncclGetVersion");
  resolve(error_string, "ncclGetErrorString");
  resolve(get_unique_id, "ncclGetUniqueId");
  resolve(comm_init_all, "ncclCommInitAll");
  resolve(comm_init_rank, "ncclCommInitRank");
  resolve(comm_destroy, "ncclCommDestroy");
  resolve(group_start, "ncclGroupStart");
  resolve(group_end, "ncclGroupEnd");
  resolve(all_reduce, "ncclAllReduce");
  resolve(broadcast, "ncclBroadcast");
}

}  // namespace tandem::ops
