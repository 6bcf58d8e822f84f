// The config file's sections, one decoder each (sections.cpp), over the core's shared YAML reader. Internal to
// daemon/config; single-threaded.
#pragma once

#include <string>

#include "faultline/yaml_reader.hpp"
#include "faultline/config.hpp"

namespace faultline::config_detail {

// Decodes the document's root mapping into `config` (which holds the defaults). Relative paths are taken from
// `config_dir`, the directory of the config file.
void decode_config(yaml::Reader& r, const YAML::Node& root, Config& config, const std::string& config_dir);

}  // namespace faultline::config_detail
