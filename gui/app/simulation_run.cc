#include "gui/app/simulation_run.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTimer>
#include <csignal>

#include <fstream>
#include <vector>

#include "driver/sweep_results.h"

namespace dtsim::gui {
namespace {

constexpr int kReapPollMs = 20;
constexpr int kReapTries = 250;  // 5 s: a killed process is gone long before

struct ProcStat {
  pid_t pid = 0;
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
};

// The processes in `group`, from /proc/PID/stat ("pid (comm) state ppid pgrp ...").
std::vector<ProcStat> processes_in_group(pid_t group) {
  std::vector<ProcStat> found;
  const QDir proc("/proc");
  for (const QString& entry : proc.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    bool numeric = false;
    const pid_t pid = entry.toInt(&numeric);
    if (!numeric) continue;
    std::ifstream in("/proc/" + entry.toStdString() + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos || close + 2 >= line.size()) continue;
    ProcStat s;
    s.pid = pid;
    int ppid = 0, pgrp = 0;
    if (std::sscanf(line.c_str() + close + 2, "%c %d %d", &s.state, &ppid, &pgrp) != 3) continue;
    s.ppid = ppid;
    s.pgrp = pgrp;
    if (s.pgrp == group) found.push_back(s);
  }
  return found;
}

}  // namespace

double RunRecord::step_time_s() const {
  if (result.is_object() && result.contains("step_time_s") && result["step_time_s"].is_number())
    return result["step_time_s"].get<double>();
  return 0;
}

SimulationRun::SimulationRun(QObject* parent) : QObject(parent) {}

SimulationRun::~SimulationRun() {
  if (group_ > 0 && !done_) {
    ::kill(-static_cast<pid_t>(group_), SIGKILL);
    if (process_) {
      process_->disconnect(this);
      process_->waitForFinished(2000);
    }
    for (const ProcStat& p : processes_in_group(static_cast<pid_t>(group_)))
      if (p.ppid == getpid()) waitpid(p.pid, nullptr, WNOHANG);
  }
}

void SimulationRun::start(const RunRequest& request, int id) {
  record_ = RunRecord{};
  record_.id = id;
  record_.label = request.label;
  record_.scenario_file = request.scenario_file;
  record_.engine = request.engine;
  record_.result_file = QDir(request.run_dir).filePath("result.json");
  record_.trace_file = request.trace ? QDir(request.run_dir).filePath("trace.json") : QString();
  record_.started = QDateTime::currentDateTime();
  cancelled_ = false;
  done_ = false;
  group_ = 0;
  stderr_.clear();
  stderr_tail_.clear();

  if (process_) process_->deleteLater();
  process_ = new QProcess(this);
  QStringList args{"simulate", request.scenario_file, "--json", "-o", record_.result_file};
  if (request.trace) args << "--trace" << record_.trace_file;
  if (!request.engine.isEmpty()) args << "--engine" << request.engine;
  for (const QString& o : request.overrides) args << "--set" << o;
  process_->setProgram(request.dtsim);
  process_->setArguments(args);
  process_->setStandardOutputFile(QProcess::nullDevice());  // the result goes to -o
  process_->setChildProcessModifier([] {
    // Between fork and exec: only async-signal-safe calls. Its own group, so cancel() reaches the
    // SimGrid process it forks; SIGKILL when the GUI dies, so nothing outlives it.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
  });
  connect(process_, &QProcess::readyReadStandardError, this, [this] {
    stderr_ += process_->readAllStandardError();
    qsizetype nl;
    while ((nl = stderr_.indexOf('\n')) >= 0) {
      QString line = QString::fromUtf8(stderr_.left(nl)).trimmed();
      stderr_.remove(0, nl + 1);
      const qsizetype cr = line.lastIndexOf('\r');  // a heartbeat that rewrites its line
      if (cr >= 0) line = line.mid(cr + 1);
      if (line.isEmpty()) continue;
      stderr_tail_ += line + "\n";
      if (stderr_tail_.size() > 64 * 1024) stderr_tail_ = stderr_tail_.right(32 * 1024);
      emit progress(line);
    }
  });
  connect(process_, &QProcess::started, this, [this] {
    group_ = process_->processId();
    setpgid(static_cast<pid_t>(group_), static_cast<pid_t>(group_));  // may already be so
  });
  connect(process_, &QProcess::finished, this, &SimulationRun::on_finished);
  connect(process_, &QProcess::errorOccurred, this, &SimulationRun::on_error);
  clock_.start();
  process_->start();
}

bool SimulationRun::running() const {
  return !done_;
}

double SimulationRun::elapsed_s() const {
  return clock_.isValid() ? static_cast<double>(clock_.nsecsElapsed()) * 1e-9 : 0.0;
}

void SimulationRun::cancel() {
  if (done_ || cancelled_) return;
  cancelled_ = true;
  if (group_ > 0) {
    ::kill(-static_cast<pid_t>(group_), SIGKILL);
    ::kill(static_cast<pid_t>(group_), SIGKILL);
  } else if (process_) {
    process_->kill();
  }
}

void SimulationRun::on_error(QProcess::ProcessError error) {
  if (error != QProcess::FailedToStart || done_) return;
  finish(RunRecord::Status::kFailed,
         "cannot run " + process_->program() + ": " + process_->errorString() +
             " (give the dtsim program with --dtsim PATH or the DTSIM environment variable)");
}

void SimulationRun::on_finished(int exit_code, QProcess::ExitStatus status) {
  if (done_) return;
  record_.wall_s = elapsed_s();
  const QString said = (stderr_tail_ + QString::fromUtf8(stderr_)).trimmed();
  if (cancelled_) {
    reap_group_then_finish();
    return;
  }
  // Whatever the child forked goes with it (it waits for its SimGrid process itself; this is for
  // a child that died first).
  if (group_ > 0) ::kill(-static_cast<pid_t>(group_), SIGKILL);
  if (status == QProcess::CrashExit) {
    finish(RunRecord::Status::kFailed,
           "dtsim simulate ended abnormally" + (said.isEmpty() ? QString() : ":\n" + said));
    return;
  }
  if (exit_code == 2) {
    // A configuration that does not fit still has its whole result, which says where the
    // memory goes; any other exit 2 is input the child refused.
    QFile file(record_.result_file);
    if (file.open(QIODevice::ReadOnly)) {
      const QByteArray bytes = file.readAll();
      auto result = nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size(),
                                          nullptr, false);
      if (driver::result_does_not_fit(result)) {
        record_.result = std::move(result);
        if (record_.result.contains("engine") && record_.result["engine"].is_string())
          record_.engine = QString::fromStdString(record_.result["engine"].get<std::string>());
        finish(RunRecord::Status::kDoesNotFit, said);
        return;
      }
    }
    finish(RunRecord::Status::kBadInput, said);
    return;
  }
  if (exit_code != 0) {
    finish(
        RunRecord::Status::kFailed,
        said.isEmpty() ? "dtsim simulate exited with status " + QString::number(exit_code) : said);
    return;
  }
  QFile file(record_.result_file);
  if (!file.open(QIODevice::ReadOnly)) {
    finish(RunRecord::Status::kFailed, record_.result_file + ": dtsim wrote no result");
    return;
  }
  const QByteArray bytes = file.readAll();
  record_.result =
      nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size(), nullptr, false);
  if (record_.result.is_discarded() || !record_.result.is_object()) {
    finish(RunRecord::Status::kFailed, record_.result_file + ": not a result object");
    return;
  }
  if (record_.result.contains("engine") && record_.result["engine"].is_string())
    record_.engine = QString::fromStdString(record_.result["engine"].get<std::string>());
  finish(RunRecord::Status::kOk, {});
}

void SimulationRun::reap_group_then_finish() {
  // Poll, never block: the UI thread keeps running while the group's processes die.
  reap_tries_ = 0;
  reap_step();
}

void SimulationRun::reap_step() {
  bool left = false;
  if (group_ > 0)
    for (const ProcStat& p : processes_in_group(static_cast<pid_t>(group_))) {
      if (p.state != 'Z') ::kill(p.pid, SIGKILL);
      if (p.ppid == getpid() && waitpid(p.pid, nullptr, WNOHANG) == p.pid) continue;
      left = true;
    }
  if (left && ++reap_tries_ < kReapTries) {
    QTimer::singleShot(kReapPollMs, this, &SimulationRun::reap_step);
    return;
  }
  finish(RunRecord::Status::kCancelled,
         QString("cancelled after %1 s").arg(record_.wall_s, 0, 'f', 1));
}

void SimulationRun::finish(RunRecord::Status status, const QString& message) {
  if (done_) return;
  done_ = true;
  record_.status = status;
  record_.message = message;
  if (record_.wall_s == 0) record_.wall_s = elapsed_s();
  emit finished(record_);
}

QString dtsim_program(const QString& flag) {
  if (!flag.isEmpty()) return flag;
  const QString env = qEnvironmentVariable("DTSIM");
  if (!env.isEmpty()) return env;
  const QString here = QCoreApplication::applicationDirPath();
  for (const QString& candidate : {here + "/dtsim", here + "/../../cli/dtsim"}) {
    const QFileInfo info(candidate);
    if (info.isFile() && info.isExecutable()) return info.canonicalFilePath();
  }
  return "dtsim";  // from PATH
}

void become_subreaper() {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
}

}  // namespace dtsim::gui
