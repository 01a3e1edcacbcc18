// The exported graph's format name and version (docs/file-format.md), shared by export_block
// and ImportedBlock. The version goes up whenever a change would make an older reader misread
// a file (a node's meaning, an attribute's unit); readers accept their own version only.
#pragma once

#include <string>

namespace tandem::nn::detail {

inline constexpr const char* kGraphFormatName = "tandem-graph";
inline constexpr int kGraphFormatVersion = 1;

// The project's version ("0.1.0"), written into every graph for the reader's error messages.
std::string tandem_version();

}  // namespace tandem::nn::detail
