// NVML (the driver's management library, libnvidia-ml.so.1) loaded at run time with dlopen, so
// that vramsim-calibrate has no link-time dependency on it: the binary starts on a machine
// without NVML (a build host, a container without the driver's management library) and only
// the power benchmark is skipped there. The few entry points the power benchmark uses are
// declared here from NVML's public C API (nvml.h, stable ABI: int return codes, an opaque
// device handle), so the build needs no nvml.h either.
// Plain C++17, header-only (nvcc compiles it). Units: energy in millijoules, power in milliwatts,
// as NVML gives them.
#pragma once

#include <dlfcn.h>

#include <string>
#include <type_traits>

namespace vramsim::calibrate {

struct NvmlApi {
  using Return = int;                // nvmlReturn_t; 0 is NVML_SUCCESS
  using Device = struct NvmlDevice*;  // nvmlDevice_t (opaque)
  static constexpr Return kSuccess = 0;
  static constexpr unsigned int kMigEnable = 1;  // NVML_DEVICE_MIG_ENABLE

  Return (*init)() = nullptr;                                                  // nvmlInit_v2
  Return (*shutdown)() = nullptr;                                              // nvmlShutdown
  const char* (*error_string)(Return) = nullptr;                               // nvmlErrorString
  Return (*handle_by_pci_bus_id)(const char*, Device*) = nullptr;              // nvmlDeviceGetHandleByPciBusId_v2
  Return (*mig_mode)(Device, unsigned int*, unsigned int*) = nullptr;          // nvmlDeviceGetMigMode
  Return (*total_energy)(Device, unsigned long long*) = nullptr;               // ..GetTotalEnergyConsumption (mJ)
  Return (*enforced_power_limit)(Device, unsigned int*) = nullptr;             // ..GetEnforcedPowerLimit (mW)

  // Empty when every entry point was found; otherwise why NVML cannot be used.
  std::string missing;

  std::string error(Return r) const { return error_string ? error_string(r) : "NVML error " + std::to_string(r); }
};

// Opens libnvidia-ml.so.1 (the driver's soname) and resolves the entry points above. The
// library stays loaded for the life of the process. Never throws; `missing` says what failed.
inline NvmlApi load_nvml() {
  NvmlApi api;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    api.missing = std::string("cannot load libnvidia-ml.so.1: ") + (why ? why : "not found");
    return api;
  }
  auto bind = [&](auto& fn, const char* symbol) {
    void* p = dlsym(lib, symbol);
    if (!p) {
      if (!api.missing.empty()) api.missing += ", ";
      api.missing += symbol;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  bind(api.init, "nvmlInit_v2");
  bind(api.shutdown, "nvmlShutdown");
  bind(api.error_string, "nvmlErrorString");
  bind(api.handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  bind(api.mig_mode, "nvmlDeviceGetMigMode");
  bind(api.total_energy, "nvmlDeviceGetTotalEnergyConsumption");
  bind(api.enforced_power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  if (!api.missing.empty()) api.missing = "libnvidia-ml.so.1 lacks " + api.missing;
  return api;
}

}  // namespace vramsim::calibrate
