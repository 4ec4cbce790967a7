#include "sim/scenario.h"

#include "core/config_reader.h"

namespace vramsim::sim {

using config::Lower;
using config::MapReader;
using config::Node;
using units::Dimension;

std::string_view to_string(CachePolicy p) {
  switch (p) {
    case CachePolicy::Profile: return "profile";
    case CachePolicy::Lru: return "lru";
    case CachePolicy::Lfu: return "lfu";
    case CachePolicy::ProfileLru: return "profile-lru";
  }
  return "?";
}

namespace {

// Splits a placement mapping into the scenario-level keys (`own`) and the catalogue reference.
Node without_keys(const Node& ref, std::initializer_list<std::string_view> keys) {
  if (!ref.is_map()) return ref;
  Node out = Node::map(ref.origin());
  for (const auto& [k, v] : ref.entries()) {
    bool skip = false;
    for (auto key : keys) skip = skip || k == key;
    if (!skip) out.set(k, v);
  }
  return out;
}

GpuSetup decode_gpu_setup(const Node& ref, const config::Catalogue& catalogue) {
  GpuSetup g;
  const Node resolved = catalogue.resolve("gpus", "GPU", without_keys(ref, {"count", "vram_used_by_others", "free_vram"}),
                                          "hardware.gpu");
  g.spec = hw::decode_gpu(resolved, "hardware.gpu");
  if (ref.is_map()) {
    // Read the scenario-level keys from a view that holds only them.
    Node own = Node::map(ref.origin());
    for (const auto& [k, v] : ref.entries())
      if (k == "count" || k == "vram_used_by_others" || k == "free_vram") own.set(k, v);
    MapReader r(own, "hardware.gpu");
    g.count = static_cast<int>(r.optional_integer("count", 1, 64).value_or(1));
    g.vram_used_by_others = r.optional_quantity("vram_used_by_others", Dimension::Bytes, Lower::NonNegative).value_or(0);
    g.free_vram = r.optional_quantity("free_vram", Dimension::Bytes);
    const double total = g.spec.driver_total_bytes.value_or(g.spec.memory_bytes);
    if (g.vram_used_by_others >= total)
      r.fail_at("vram_used_by_others", "other tenants cannot hold the whole card (" + units::format_gib(total) + ")");
    if (g.free_vram && *g.free_vram > total) r.fail_at("free_vram", "more free VRAM than the card has");
    r.finish();
  }
  return g;
}

LinkSetup decode_link_setup(const Node& ref, const config::Catalogue& catalogue) {
  LinkSetup l;
  l.spec = hw::decode_link(catalogue.resolve("links", "link", without_keys(ref, {"measured_h2d"}), "hardware.link"),
                           "hardware.link");
  l.h2d_bandwidth = l.spec.typical_bandwidth;
  if (ref.is_map()) {
    if (const Node* m = ref.find("measured_h2d")) {
      Node own = Node::map(ref.origin());
      own.set("measured_h2d", *m);
      MapReader r(own, "hardware.link");
      l.h2d_bandwidth = r.quantity("measured_h2d", Dimension::Bandwidth);
      if (l.h2d_bandwidth > l.spec.nominal_bandwidth)
        r.fail_at("measured_h2d", "a measured bandwidth cannot exceed the link's nominal " +
                                      units::format_bandwidth(l.spec.nominal_bandwidth));
      r.finish();
    }
  }
  return l;
}

EnginePhysics decode_physics(MapReader& e) {
  EnginePhysics p;
  p.gpu_bandwidth_efficiency = e.number("gpu_bandwidth_efficiency");
  p.gpu_compute_efficiency = e.number("gpu_compute_efficiency");
  if (p.gpu_bandwidth_efficiency > 1) e.fail_at("gpu_bandwidth_efficiency", "an efficiency is at most 1");
  if (p.gpu_compute_efficiency > 1) e.fail_at("gpu_compute_efficiency", "an efficiency is at most 1");
  p.runtime_vram = e.quantity("runtime_vram", Dimension::Bytes, Lower::NonNegative);
  p.slot_alignment = e.quantity("slot_alignment", Dimension::Bytes);
  p.step_overhead = e.quantity("step_overhead", Dimension::Time, Lower::NonNegative);
  p.layer_launch = e.quantity("layer_launch", Dimension::Time, Lower::NonNegative);
  p.miss_sync = e.quantity("miss_sync", Dimension::Time, Lower::NonNegative);
  p.miss_sync_idle = e.quantity("miss_sync_idle", Dimension::Time, Lower::NonNegative);
  if (p.miss_sync_idle > p.miss_sync) e.fail_at("miss_sync_idle", "cannot exceed miss_sync");
  p.cpu_expert_share = e.number("cpu_expert_share");
  if (p.cpu_expert_share > 1) e.fail_at("cpu_expert_share", "a share of the host's memory bandwidth is at most 1");
  p.pcie_split_reference = e.quantity("pcie_split_reference", Dimension::Bandwidth);
  p.host_expert_workers = static_cast<int>(e.integer("host_expert_workers", 0, 4096));
  p.zero_copy_efficiency = e.number("zero_copy_efficiency");
  if (p.zero_copy_efficiency > 1) e.fail_at("zero_copy_efficiency", "an efficiency is at most 1");
  p.default_pcie_frac = e.number("default_pcie_frac", Lower::NonNegative);
  if (p.default_pcie_frac > 1) e.fail_at("default_pcie_frac", "a fraction is at most 1");
  p.wait_power = e.quantity("wait_power", Dimension::Power, Lower::NonNegative);
  p.energy_per_byte = e.number("energy_per_byte_pj", Lower::NonNegative) * 1e-12;
  return p;
}

EngineSetup decode_engine(const Node& ref, const config::Catalogue& catalogue, const workloads::FormatTables& formats,
                          const workloads::ModelSpec& model) {
  // The engine section refines an engine preset (configs/engines/), expert-cache by default.
  Node with_preset = ref;
  if (ref.is_map() && !ref.find("preset")) with_preset.set("preset", Node::scalar("expert-cache", ref.origin()));
  if (ref.is_null()) {
    with_preset = Node::map(ref.origin());
    with_preset.set("preset", Node::scalar("expert-cache", ref.origin()));
  }
  const Node resolved = catalogue.resolve("engines", "engine", with_preset, "engine");
  MapReader e(resolved, "engine");
  EngineSetup s;
  s.preset = e.string("name");
  e.ignore("source");
  s.context = e.integer("context", 1, std::int64_t{1} << 32);
  if (s.context > model.max_context)
    e.fail_at("context", "exceeds " + model.name + "'s maximum of " + std::to_string(model.max_context) + " tokens");
  const std::string kv = e.string("kv_type");
  if (!formats.kv(kv)) e.fail_at("kv_type", "unknown KV-cache type \"" + kv + "\" (see `vramsim list formats`)");
  s.kv = *formats.kv(kv);
  s.parallel = static_cast<int>(e.optional_integer("parallel", 1, 1024).value_or(1));
  if (auto cap = e.optional_integer("max_queue", 0, 1 << 30)) s.max_queue = static_cast<int>(*cap);
  s.scheduling = e.choice("slot_scheduling", {"serial", "overlapped"}) == "serial" ? SlotScheduling::Serial
                                                                                    : SlotScheduling::Overlapped;
  if (auto w = e.optional_map("weights")) {
    auto format = [&](const char* key) {
      const std::string name = w->optional_string(key).value_or(model.native_format);
      if (!formats.weight(name)) w->fail_at(key, "unknown weights format \"" + name + "\"");
      return *formats.weight(name);
    };
    s.expert_format = format("experts");
    s.other_format = format("other");
    w->finish();
  } else {
    s.expert_format = s.other_format = *formats.weight(model.native_format);
  }
  {
    MapReader c = e.map("expert_cache");
    const Node& size = c.any("size");
    if (!(size.is_scalar() && size.text() == "auto"))
      s.cache_slots = c.integer("size", 0, std::int64_t{1} << 40);
    s.cache_reserve = c.quantity("reserve", Dimension::Bytes, Lower::NonNegative);
    const std::string policy = c.choice("policy", {"profile", "lru", "lfu", "profile-lru"});
    s.policy = policy == "profile" ? CachePolicy::Profile
               : policy == "lru"   ? CachePolicy::Lru
               : policy == "lfu"   ? CachePolicy::Lfu
                                   : CachePolicy::ProfileLru;
    s.dynamic_share = c.optional_number("dynamic_share", Lower::NonNegative).value_or(0.0);
    if (s.dynamic_share > 1) c.fail_at("dynamic_share", "a share is at most 1");
    if (s.policy == CachePolicy::ProfileLru && s.dynamic_share <= 0)
      c.fail_at("policy", "profile-lru needs `dynamic_share` (0 < share <= 1): the part of the slots managed by LRU");
    if (s.policy != CachePolicy::ProfileLru && s.dynamic_share > 0)
      c.fail_at("dynamic_share", "only the profile-lru policy has a dynamic share");
    c.finish();
  }
  if (auto sp = e.optional_map("speculative")) {
    const std::string kind = sp->choice("kind", {"none", "mtp"});
    s.speculative = kind == "mtp";
    if (s.speculative) {
      s.draft_tokens = static_cast<int>(sp->integer("draft_tokens", 1, 64));
      s.acceptance = sp->number("acceptance", Lower::NonNegative);
      if (s.acceptance >= 1) sp->fail_at("acceptance", "an acceptance rate is below 1");
      s.draft_head_bytes = sp->quantity("head", Dimension::Bytes, Lower::NonNegative);
    } else {
      // kind: none switches MTP off; its settings may stay in the file (e.g. --set ...kind=none).
      sp->ignore("draft_tokens");
      sp->ignore("acceptance");
      sp->ignore("head");
    }
    sp->finish();
  }
  s.physics = decode_physics(e);
  e.finish();
  return s;
}

WorkloadSetup decode_workload(MapReader w) {
  WorkloadSetup s;
  if (auto arrival = w.optional_map("arrival")) {
    const std::string process = arrival->choice("process", {"closed", "poisson"});
    s.open_loop = process == "poisson";
    if (s.open_loop) s.arrival_rate = arrival->quantity("rate", Dimension::Rate);
    arrival->finish();
  }
  if (s.open_loop) {
    if (w.has("clients")) w.fail_at("clients", "an open-loop (poisson) workload has no clients: requests arrive at `arrival.rate`");
    w.ignore("clients");  // unset (`clients:` or `--set workload.clients=`)
    s.clients = 0;
  } else {
    s.clients = static_cast<int>(w.integer("clients", 1, 1 << 20));
  }
  s.requests = static_cast<int>(w.integer("requests", 1, 100000000));
  s.prompt_tokens = w.integer("prompt_tokens", 1, std::int64_t{1} << 32);
  s.gen_tokens = w.integer("gen_tokens", 1, std::int64_t{1} << 32);
  w.finish();
  return s;
}

}  // namespace

Scenario decode_scenario(const Node& root, const config::Catalogue& catalogue, const workloads::FormatTables& formats) {
  MapReader r(root, "");
  Scenario s;
  s.source = root.origin().source;
  {
    MapReader hw = r.map("hardware");
    s.gpu = decode_gpu_setup(hw.any("gpu"), catalogue);
    s.link = decode_link_setup(hw.any("link"), catalogue);
    if (s.link.h2d_bandwidth < 0.5 * s.link.spec.typical_bandwidth)
      s.warnings.push_back("hardware.link.measured_h2d (" + units::format_bandwidth(s.link.h2d_bandwidth) +
                           ") is under half of " + s.link.spec.name + "'s typical " +
                           units::format_bandwidth(s.link.spec.typical_bandwidth) +
                           "; the simulation uses the measured figure (set it anew after changing the link)");
    s.host = hw::decode_host(catalogue.resolve("hosts", "host", hw.any("host"), "hardware.host"), "hardware.host");
    hw.finish();
  }
  if (s.gpu.count != 1)
    config::fail(*r.node().find("hardware"), "hardware.gpu.count",
                 "`vramsim run` simulates one card so far (multi-card splits are not built yet); use `vramsim fit --gpus N` "
                 "for the memory budget of several cards");
  s.model = workloads::decode_model(catalogue.resolve("models", "model", r.any("model"), "model"), "model");
  if (!s.model.moe) config::fail(r.any("model"), "model", s.model.name + " is a dense model; `vramsim run` simulates an MoE expert cache");
  if (!s.model.moe->routing)
    config::fail(r.any("model"), "model.moe.routing", "missing: the routing statistics (coverage points) of " + s.model.name);
  const Node* engine = r.optional_any("engine");
  s.engine = decode_engine(engine ? *engine : Node::map(root.origin()), catalogue, formats, s.model);
  s.workload = decode_workload(r.map("workload"));
  s.seed = static_cast<std::uint64_t>(r.optional_integer("seed", 0, std::int64_t{1} << 53).value_or(1));
  r.finish();

  // Physically impossible combinations.
  const double expert_bytes = s.model.moe->expert_params * s.engine.expert_format.bits_per_weight / 8.0;
  const double all_experts = expert_bytes * s.model.moe->experts * s.model.moe->layers;
  if (all_experts > s.host.memory_bytes)
    config::fail(r.any("hardware"), "hardware.host",
                 "the experts (" + units::format_gib(all_experts) + ") do not fit in " + s.host.name + "'s RAM (" +
                     units::format_gib(s.host.memory_bytes) + ")");
  return s;
}

}  // namespace vramsim::sim
