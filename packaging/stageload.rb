# Homebrew formula for stageload, built from the git repository (HEAD).
#
# From a clone, through a local tap (docs/macos.md has the details):
#   brew tap-new "$USER/stageload"
#   cp packaging/stageload.rb "$(brew --repository "$USER/stageload")/Formula/"
#   HOMEBREW_STAGELOAD_GIT="file://$PWD" brew install --HEAD "$USER/stageload/stageload"
#   sudo brew services start stageload
#
# HOMEBREW_STAGELOAD_GIT picks the repository to build (brew passes
# HOMEBREW_* variables through to formulae); without it the formula builds
# the URL below, which a published tap sets to the project's repository.
class Stageload < Formula
  desc "Memory-aware job queue and memory history daemon for shared Macs"
  homepage "https://github.com/stageload/stageload"
  license "ISC"
  head ENV.fetch("HOMEBREW_STAGELOAD_GIT", "https://github.com/stageload/stageload.git"),
       branch: "main"

  depends_on "cmake" => :build
  depends_on "pkgconf" => :build
  depends_on "cjson"
  depends_on "libmicrohttpd"
  depends_on "libuv"
  depends_on "sqlite"

  def install
    system "cmake", "-S", ".", "-B", "build", "-DSTAGELOAD_TESTS=OFF",
           "-DSTAGELOAD_STATIC_DEPS=ON", *std_cmake_args
    system "cmake", "--build", "build"
    system "cmake", "--install", "build"
    # The LaunchDaemon files, for an install outside brew services.
    pkgshare.install "launchd"
    pkgshare.install "packaging/stageload.conf.example"
  end

  # `sudo brew services start stageload` makes this a LaunchDaemon in the
  # system domain, and brew then takes root:admin ownership of the keg, its
  # bin and the opt link (later upgrades and uninstalls need sudo), but
  # not of the prefix or Cellar above them, which stay the Homebrew user's:
  # that user could still put another binary where root's daemon runs it,
  # or change a library it loads; the daemon is linked with libuv, cJSON
  # and sqlite statically (STAGELOAD_STATIC_DEPS) so it loads only the
  # system's. On a shared Mac prefer launchd/install.sh --copy (caveats
  # below). stop_timeout is the plist's ExitTimeOut: 30 s between SIGTERM
  # and SIGKILL, far more than the daemon's clean stop needs. A
  # `brew services start` without sudo loads the same service as the
  # user's LaunchAgent, which cannot serve the system socket: the daemon
  # says why in the log and exits 0, and successful_exit: false keeps
  # launchd from starting it again every 10 s (not yet tried on a Mac).
  # The daemon creates /var/db/stageload itself and binds
  # /var/run/stageload.sock (mode 0666; every request is authorised by the
  # peer's credentials), the same paths launchd/install.sh uses, so clients
  # find it either way. Jobs run in their own sessions, so stopping the
  # service does not take them down. Like the plist it reads
  # /etc/stageload.conf when that exists (root-owned, not writable by
  # others; not brew's etc, which the Homebrew user could change), with
  # the options below over it; the commented example is in pkgshare.
  service do
    run [opt_bin/"stageloadd", "--socket", "/var/run/stageload.sock",
         "--db", "/var/db/stageload/stageload.db", "--foreground"]
    require_root true
    keep_alive successful_exit: false
    process_type :interactive
    stop_timeout 30
    error_log_path var/"log/stageloadd.log"
    log_path var/"log/stageloadd.log"
  end

  def caveats
    <<~EOS
      stageloadd runs as root so it can run queued jobs as the users who
      submitted them:
        sudo brew services start stageload
      brew services then makes some stageload paths root's, so upgrades
      need sudo, and the Homebrew prefix above them stays yours: anyone who
      can write it could change what root runs. On a Mac shared with
      others install the LaunchDaemon with a root-owned copy instead (logs
      in /var/log/stageload; run it again after each upgrade):
        sudo #{opt_pkgshare}/launchd/install.sh --prefix #{HOMEBREW_PREFIX} --copy
      Use one of the two, not both: they serve the same socket.
      The dashboard and /metrics (stageload-web, unprivileged, on
      http://127.0.0.1:9473/; docs/dashboards.md):
        sudo #{opt_pkgshare}/launchd/install-web.sh --prefix #{HOMEBREW_PREFIX}
    EOS
  end

  test do
    assert_match "stageload", shell_output("#{bin}/stageloadd --version")
    assert_match "stageload-web", shell_output("#{bin}/stageload-web --version")
    sock = testpath/"sl.sock"
    pid = spawn bin/"stageloadd", "--socket", sock.to_s, "--db", (testpath/"sl.db").to_s
    begin
      100.times do
        break if sock.exist?

        sleep 0.1
      end
      assert_match "free_pct", shell_output("#{bin}/stageloadctl --socket #{sock} info --json")
    ensure
      Process.kill("TERM", pid)
      Process.wait(pid)
    end
  end
end
