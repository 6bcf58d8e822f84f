// Internal: the on-call page's files (daemon/server/page/*), compiled into the binary by cmake/embed_assets.cmake.
#pragma once

#include <span>
#include <string_view>

namespace faultline::server_detail {

struct PageAsset {
  std::string_view name;          // "index.html", "page.css", "page.js"
  std::string_view content_type;  // from the file's extension
  std::string_view body;
};

std::span<const PageAsset> page_assets();

}  // namespace faultline::server_detail
