#include "hw/link.h"

#include "core/config_reader.h"

namespace vramsim::hw {

using config::Lower;
using config::MapReader;
using units::Dimension;

LinkSpec decode_link(const config::Node& node, const std::string& key_path) {
  MapReader r(node, key_path);
  LinkSpec l;
  l.name = r.string("name");
  r.ignore("display_name");
  r.ignore("source");
  l.kind = r.choice("kind", {"pcie", "nvlink"}) == "pcie" ? LinkKind::Pcie : LinkKind::Nvlink;
  l.generation = static_cast<int>(r.integer("generation", 1, 7));
  l.lanes = static_cast<int>(r.integer("lanes", 1, 64));
  {
    MapReader b = r.map("bandwidth");
    l.nominal_bandwidth = b.quantity("nominal", Dimension::Bandwidth);
    l.typical_bandwidth = b.quantity("typical", Dimension::Bandwidth);
    if (l.typical_bandwidth > l.nominal_bandwidth)
      b.fail_at("typical", "achieved bandwidth cannot exceed the nominal one");
    b.finish();
  }
  l.latency_s = r.quantity("latency", Dimension::Time, Lower::NonNegative);
  if (auto duplex = r.optional_string("duplex"); duplex && *duplex != "full")
    r.fail_at("duplex", "only full-duplex links are modelled; expected \"full\"");
  if (l.kind == LinkKind::Nvlink)
    l.topology = r.choice("topology", {"bridge", "switch"}) == "bridge" ? NvlinkTopology::Bridge : NvlinkTopology::Switch;
  else if (r.has("topology"))
    r.fail_at("topology", "only an NVLink link has a topology (bridge or switch)");
  r.finish();
  return l;
}

}  // namespace vramsim::hw
