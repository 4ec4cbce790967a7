// An output that could not be written (a full disk, /dev/full, a read-only folder): main()
// prints it once, "vramsim COMMAND: error: cannot write FILE: REASON", and exits with status 1.
#pragma once

#include <stdexcept>

#include "core/output_file.h"

namespace vramsim::cli {

class WriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Commits `file`, or throws WriteError with the reason.
inline void commit_or_throw(io::AtomicFile& file) {
  if (auto committed = file.commit(); !committed) throw WriteError(committed.error().message);
}

}  // namespace vramsim::cli
