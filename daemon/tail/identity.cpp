// Stream identities. Labels are set in one order for every kind: source, what the path says (namespace, pod,
// container, restart), node, then the source's static labels (which may override any of them).
#include "identity.hpp"

#include "file_io.hpp"
#include "text.hpp"

namespace faultline::tail {

namespace {

StreamIdentity labelled(const SourceSpec& src) {
  StreamIdentity id;
  id.set_label(LabelKey::source, source_label(src));
  return id;
}

void add_node_and_static_labels(StreamIdentity& id, const SourceSpec& src, std::string_view node_name) {
  if (!node_name.empty()) id.set_label(LabelKey::node, node_name);
  for (const auto& [k, v] : src.labels) set_field(id.labels, k, v);
}

// SourceSpec::name with its placeholders filled in.
std::string expand_name(const std::string& name, const std::string& path, const PathIdentity& layout) {
  std::string base = base_of(path);
  auto dot = base.rfind('.');
  std::string n = name;
  n = replace_all(n, "{path}", path);
  n = replace_all(n, "{file}", base);
  n = replace_all(n, "{stem}", dot == std::string::npos || dot == 0 ? base : base.substr(0, dot));
  n = replace_all(n, "{namespace}", layout.namespace_);
  n = replace_all(n, "{pod}", layout.pod);
  n = replace_all(n, "{container}", layout.container);
  return n;
}

}  // namespace

std::string source_label(const SourceSpec& src) {
  if (!src.source.empty()) return src.source;
  switch (src.kind) {
    case SourceKind::files: return "file";
    case SourceKind::stdin_stream: return "stdin";
    case SourceKind::kmsg: return "kmsg";
  }
  return "file";
}

StreamIdentity file_identity(const SourceSpec& src, std::string_view node_name, const std::string& path,
                             const PathIdentity& layout, std::string& instance_key) {
  StreamIdentity id = labelled(src);
  std::string derived;
  if (layout.kubernetes) {
    derived = layout.namespace_ + "/" + layout.pod + "/" + layout.container;
    id.set_label(LabelKey::namespace_, layout.namespace_);
    id.set_label(LabelKey::pod, layout.pod);
    id.set_label(LabelKey::container, layout.container);
    if (!layout.restart.empty()) id.set_label(LabelKey::restart, layout.restart);
    id.instance = layout.restart.empty() ? layout.container_id.substr(0, 12) : layout.restart;
    instance_key = layout.uid + "/" + layout.restart + "/" + layout.container_id;
  } else if (layout.docker) {
    derived = "docker/" + layout.container_id.substr(0, 12);
    id.set_label(LabelKey::container, layout.container_id.substr(0, 12));
    id.instance = layout.container_id.substr(0, 12);
    instance_key = layout.container_id;
  } else {
    derived = path;
  }
  add_node_and_static_labels(id, src, node_name);
  id.name = src.name.empty() ? derived : expand_name(src.name, path, layout);
  id.logical = id.name;
  return id;
}

StreamIdentity stdin_identity(const SourceSpec& src, std::string_view node_name) {
  StreamIdentity id = labelled(src);
  add_node_and_static_labels(id, src, node_name);
  id.name = src.name.empty() ? "stdin" : src.name;
  id.logical = id.name;
  return id;
}

StreamIdentity kmsg_identity(const SourceSpec& src, std::string_view node_name, std::string boot_id) {
  StreamIdentity id = labelled(src);
  add_node_and_static_labels(id, src, node_name);
  id.name = src.name.empty() ? "kmsg" : src.name;
  id.logical = node_name.empty() ? "kmsg" : "kmsg/" + std::string(node_name);
  id.instance = std::move(boot_id);
  return id;
}

}  // namespace faultline::tail
