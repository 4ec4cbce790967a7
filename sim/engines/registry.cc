// The engine families, registered explicitly (no static-initialisation registry).
#include <utility>

#include "sim/engines/engine_family.h"

namespace vramsim::sim::engines {
namespace {

struct Entry {
  EngineFamilyId id;
  const EngineFamily& (*get)();
};

const Entry kFamilies[] = {
    {EngineFamilyId::LlamaCpp, llama_cpp_family},
    {EngineFamilyId::Vllm, vllm_family},
    {EngineFamilyId::ExpertCache, expert_cache_family},
    {EngineFamilyId::HybridCpuExperts, hybrid_cpu_experts_family},
};

}  // namespace

const EngineFamily& family(EngineFamilyId id) {
  for (const auto& f : kFamilies)
    if (f.id == id) return f.get();
  return llama_cpp_family();  // unreachable: every id is listed
}

const EngineFamily* find_family(std::string_view name, EngineFamilyId* id) {
  for (const auto& f : kFamilies)
    if (f.get().name() == name) {
      if (id) *id = f.id;
      return &f.get();
    }
  return nullptr;
}

std::vector<std::string> family_names() {
  std::vector<std::string> names;
  for (const auto& f : kFamilies) names.emplace_back(f.get().name());
  return names;
}

}  // namespace vramsim::sim::engines
