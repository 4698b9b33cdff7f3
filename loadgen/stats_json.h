// ClientStats <-> JSON for the one-line reports worker processes send their
// parent (serene-bench and serene-bench comm). Private to loadgen.
#pragma once

#include <nlohmann/json.hpp>

#include "serene/client.h"

namespace serene::loadgen {

inline void StatsToJson(const ClientStats& s, nlohmann::json* j) {
  (*j)["packets_sent"] = s.packets_sent;
  (*j)["packets_received"] = s.packets_received;
  (*j)["reads"] = s.reads;
  (*j)["read_retransmits"] = s.read_retransmits;
  (*j)["clock_retransmits"] = s.clock_retransmits;
  (*j)["nacks"] = s.nacks;
  (*j)["rows_resent"] = s.rows_resent;
  (*j)["probes"] = s.probes;
  (*j)["group_rows"] = s.group_rows;
  (*j)["rejoins"] = s.rejoins;
  (*j)["switch_restarts"] = s.switch_restarts;
}

// Throws nlohmann::json::exception on a missing field.
inline void StatsFromJson(const nlohmann::json& j, ClientStats* s) {
  s->packets_sent = j.at("packets_sent");
  s->packets_received = j.at("packets_received");
  s->reads = j.at("reads");
  s->read_retransmits = j.at("read_retransmits");
  s->clock_retransmits = j.at("clock_retransmits");
  s->nacks = j.at("nacks");
  s->rows_resent = j.at("rows_resent");
  s->probes = j.at("probes");
  s->group_rows = j.at("group_rows");
  s->rejoins = j.at("rejoins");
  s->switch_restarts = j.at("switch_restarts");
}

}  // namespace serene::loadgen
