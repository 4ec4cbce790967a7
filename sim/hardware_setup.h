// The machine's hardware in a scenario (hardware.gpu, hardware.link, hardware.gpu_link): the
// cards with their catalogue descriptions and scenario keys, each card's link (trained down to
// the card's PCIe generation and width), a unified-memory part's own memory as its "link", and
// the checks on a card-to-card link. Used by decode_scenario (scenario.cc).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_reader.h"
#include "sim/scenario.h"

namespace vramsim::sim {

// `ref` without the scenario-level `keys` (the rest is a catalogue reference or description).
config::Node without_keys(const config::Node& ref, std::initializer_list<std::string_view> keys);
// The scenario-level `keys` of `ref` alone, as a mapping of their own.
config::Node only_keys(const config::Node& ref, std::initializer_list<std::string_view> keys);
// A link preset or description at `path`, with its scenario keys (measured_h2d, numa_node).
LinkSetup decode_link_setup(const config::Node& ref, const config::Catalogue& catalogue, const std::string& path);
// hardware.gpu and hardware.link: one CardSetup per card, in order.
std::vector<CardSetup> decode_cards(config::MapReader& hw, const config::Catalogue& catalogue);
// The card-to-card link several such cards come with ("" for none).
std::string default_gpu_link(const std::vector<CardSetup>& cards);
// Throws ConfigError at `at` when `link` cannot join `cards`.
void check_gpu_link(const LinkSetup& link, const std::vector<CardSetup>& cards, const config::Node& at);

}  // namespace vramsim::sim
