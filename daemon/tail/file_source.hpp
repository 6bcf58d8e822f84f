// The files kind: every configured file source (paths, globs) as one set of followed files, so a file found by two
// sources (a symlink and its target) is read once. Discovery (discovery.cpp), wake-ups (watch.cpp) and reading,
// rotation and positions (file_source.cpp) are its parts. One thread: the Tailer's.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <sys/stat.h>

#include "followed_file.hpp"
#include "source.hpp"
#include "watch.hpp"

namespace faultline::tail {

class FileSource final : public Source {
 public:
  explicit FileSource(TailContext& ctx);

  void add_spec(const SourceSpec& spec) { specs_.push_back(spec); }
  void restore(const TailPositions* restored);
  // Adds each followed file's unread bytes (as of its last stat) to its source's entry.
  void add_lag(std::map<std::string, std::uint64_t>& lag) const;

  SourceKind kind() const override { return SourceKind::files; }
  int wait_fd() const override { return watch_.fd(); }
  std::optional<Steady> due() const override;
  void prepare() override;
  void positions(TailPositions& out) override;
  bool ready(const LogicalStream& s) const override;
  std::size_t read_stream(LogicalStream& s, std::size_t budget) override;
  void settle(LogicalStream& s, Steady now) override;
  void deadline(const LogicalStream& s, std::optional<Steady>& best) const override;
  bool quiet(const LogicalStream& s) const override;

 private:
  struct Candidate {
    const SourceSpec* source;
    std::string path;
    struct stat st;
  };

  // discovery.cpp
  void rescan();
  FollowedFile* discover(const Candidate& c);
  void attach(FollowedFile& f);
  bool excluded(const SourceSpec& src, const std::string& path, const std::string& real) const;
  bool self_excluded(const PathIdentity& id) const;
  void count_gone_while_stopped();
  bool reused_inode(const FollowedFile& f, const std::string& path, const struct stat& st) const;
  void forget_finished(std::map<FileKey, std::unique_ptr<FollowedFile>>::iterator it);
  SourceTailStats& counters_for_path(const std::string& path);
  bool warn_once(const std::string& what, const std::string& path);

  // watch.cpp
  void on_event_path(const std::string& path);
  void check_files();
  bool reported_by_inotify(const FollowedFile& f) const;

  // file_source.cpp
  void check_finished(FollowedFile& f, bool still_named);
  void check_open(FollowedFile& f);
  void begin(LogicalStream& s, FollowedFile& f);
  void check_content(FollowedFile& f, std::uint64_t size);
  void truncate_restart(FollowedFile& f, const char* why);
  void finish_file(LogicalStream& s, FollowedFile& f);
  void end_stream(LogicalStream& s);
  bool named_by(const std::string& path, const FollowedFile& f) const;

  // descriptors.cpp
  UniqueFd open_by_name(const FollowedFile& f) const;  // its dev/inode under its last name, or invalid
  std::optional<std::uint64_t> size_of(const FollowedFile& f) const;  // by descriptor, or by name when parked
  void park(FollowedFile& f);
  bool reopen(FollowedFile& f);
  void lose_parked(FollowedFile& f);
  void rotate_descriptors();
  std::size_t free_descriptors() const;

  TailContext& ctx_;
  std::vector<SourceSpec> specs_;
  std::map<FileKey, std::unique_ptr<FollowedFile>> files_;
  std::deque<FileKey> finished_order_;
  std::unordered_map<std::string, FileKey> by_path_;  // path as found and resolved path -> file
  std::map<FileKey, FilePosition> restored_;
  std::set<FileKey> excluded_keys_;
  bool initial_scan_ = true;
  std::uint64_t next_seq_ = 0;
  std::size_t open_fds_ = 0;
  std::size_t parked_ = 0;          // live files without a descriptor
  bool descriptor_check_ = false;   // a parked file may want a descriptor, or one may be free: rotate now
  std::unordered_set<std::string> warned_;  // paths already logged as unreadable / excluded

  Watcher watch_;
  bool rescan_needed_ = true;
  Steady next_rescan_{};       // the next check (full rescan, or stat of what inotify did not vouch for)
  Steady next_full_rescan_{};  // while inotify covers everything
  std::vector<FileKey> unvouched_;  // files stat'ed at every check: inotify does not report their changes
  std::vector<FileKey> touched_;    // files an event named since the last check
};

}  // namespace faultline::tail
