#include "reports/charts.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <fmt/format.h>

#include "core/output_file.h"
#include "core/subprocess.h"

namespace vramsim::reports {
namespace {

// A gnuplot single-quoted string: only ' needs escaping (doubled).
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A datablock string field (double quotes; gnuplot has no escape for " inside, so drop it).
std::string field(const std::string& s) {
  std::string out = "\"";
  for (char c : s)
    if (c != '"') out += c;
  return out + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "NaN";
  return fmt::format("{:.9g}", v);
}

}  // namespace

std::string gnuplot_script(const Chart& c) {
  std::string s;
  s += "set terminal svg size 760,420 dynamic noenhanced font 'sans,12' background rgb 'white'\n";
  s += "set datafile missing 'NaN'\n";
  s += "set title " + quoted(c.title) + "\n";
  s += "set xlabel " + quoted(c.xlabel) + "\n";
  s += "set ylabel " + quoted(c.ylabel) + "\n";
  s += "set key outside right top vertical noreverse\n";
  s += "set grid ytics\n";
  if (c.log_scale) {
    // One range on both axes, square: the line y = x is the diagonal, and a decade is as long
    // on either axis.
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (const auto& ser : c.series)
      for (const auto* v : {&ser.x, &ser.y})
        for (double x : *v)
          if (std::isfinite(x) && x > 0) lo = std::min(lo, x), hi = std::max(hi, x);
    s += "set logscale xy\nset grid xtics\nset size square\n";
    if (hi > 0) s += "set xrange [" + num(lo / 1.5) + ":" + num(hi * 1.5) + "]\nset yrange [" + num(lo / 1.5) + ":" + num(hi * 1.5) + "]\n";
  } else
    s += "set yrange [0:*]\n";
  s += "set border 3\nset tics nomirror\n";
  // One datablock per series (Lines) or one table (bars).
  if (c.kind == Chart::Kind::Lines || c.kind == Chart::Kind::Points) {
    const bool categorical = !c.categories.empty();
    if (categorical) s += "set xrange [-0.5:" + num(static_cast<double>(c.categories.size()) - 0.5) + "]\n";
    else if (!c.log_scale) s += "set offsets graph 0.02, graph 0.02, 0, 0\n";
    if (!categorical && !c.log_scale) {
      // Every point at one x (e.g. 0% overflow at every point): gnuplot would widen the axis
      // by one unit each side, into negative shares; keep a non-negative axis non-negative.
      double lo = std::numeric_limits<double>::infinity(), hi = -lo;
      for (const auto& ser : c.series)
        for (double x : ser.x)
          if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
      if (lo == hi) s += "set xrange [" + num(lo >= 0 ? std::max(0.0, lo - 1) : lo - 1) + ":" + num(lo + 1) + "]\n";
    }
    if (categorical) {
      s += "set xtics (";
      for (std::size_t i = 0; i < c.categories.size(); ++i)
        s += (i ? ", " : "") + quoted(c.categories[i]) + " " + std::to_string(i);
      s += ")\n";
    }
    std::string plot = "plot ";
    for (std::size_t k = 0; k < c.series.size(); ++k) {
      const auto& ser = c.series[k];
      const std::string block = "$s" + std::to_string(k);
      s += block + " << EOD\n";
      const bool band = !ser.lo.empty();
      for (std::size_t i = 0; i < ser.y.size(); ++i) {
        ((s += num(categorical ? static_cast<double>(i) : ser.x[i])) += ' ') += num(ser.y[i]);
        if (band) (((s += ' ') += num(ser.lo[i])) += ' ') += num(ser.hi[i]);
        s += "\n";
      }
      s += "EOD\n";
      const std::string lt = "lt " + std::to_string(k + 1);
      // Each series its own marker (filled circle, square, triangles, diamond, pentagon) and,
      // for scattered points, a size one step smaller than the series before it: points of two
      // series at one place stay both visible.
      static constexpr int kPointTypes[] = {7, 5, 9, 11, 13, 15};
      const std::string pt = " pt " + std::to_string(kPointTypes[k % std::size(kPointTypes)]);
      const std::string point_size = num(std::max(0.6, (c.log_scale ? 1.0 : 1.6) - 0.2 * static_cast<double>(k)));
      if (k) plot += ", ";
      if (band) plot += block + " using 1:2:3:4 with yerrorbars " + lt + " notitle, ";
      plot += block + (c.kind == Chart::Kind::Points ? " using 1:2 with points " + lt + pt + " ps " + point_size + " title "
                                                     : " using 1:2 with linespoints " + lt + " lw 2" + pt + " ps 0.8 title ") +
              quoted(ser.name);
    }
    for (const auto& ref : c.references)
      plot += ", " + num(ref.ratio) + " * x with lines dt 2 lc rgb '#888888' " + (ref.name.empty() ? std::string("notitle") : "title " + quoted(ref.name));
    s += plot + "\n";
  } else {
    s += "set style data histogram\n";
    s += c.kind == Chart::Kind::StackedBars ? "set style histogram rowstacked\n"
                                            : "set style histogram clustered gap 1\n";
    s += "set style fill solid 0.85 border -1\nset boxwidth 0.8\n";
    // Slanted labels once they would run into each other: many bars, or long labels.
    std::size_t label_chars = 0;
    for (const auto& category : c.categories) label_chars += category.size();
    if (c.categories.size() > 6 || label_chars > 60) s += "set xtics rotate by -30\n";
    s += "$t << EOD\n";
    for (std::size_t i = 0; i < c.categories.size(); ++i) {
      s += field(c.categories[i]);
      for (const auto& ser : c.series) (s += ' ') += num(i < ser.y.size() ? ser.y[i] : NAN);
      s += "\n";
    }
    s += "EOD\n";
    std::string plot = "plot ";
    for (std::size_t k = 0; k < c.series.size(); ++k) {
      if (k) plot += ", ";
      plot += "$t using " + std::to_string(k + 2) + (k == 0 ? ":xtic(1)" : "") + " lt " + std::to_string(k + 1) +
              " title " + quoted(c.series[k].name);
    }
    s += plot + "\n";
  }
  return s;
}

Result<std::string> render_svg(const Chart& chart) {
  // The script goes through a file: proc::run gives the child no stdin.
  // mkstemp: a name no one can plant a link under in advance in a shared /tmp.
  namespace fs = std::filesystem;
  std::string name = (fs::temp_directory_path() / "vramsim-chart-XXXXXX").string();
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return Error{std::string("cannot write a gnuplot script in ") + fs::temp_directory_path().string() + ": " + std::strerror(errno)};
  const fs::path script = name;
  {
    io::FdBuf buf(fd);
    std::ostream out(&buf);
    out << gnuplot_script(chart);
    out.flush();
    const bool written = buf.flush_all();
    const int err = buf.error();
    buf.detach();
    ::close(fd);
    if (!written) {
      fs::remove(script);
      return Error{io::cannot_write(name, err)};
    }
  }
  proc::ProcessResult r;
  try {
    r = proc::run({"gnuplot", script.string()});
  } catch (const std::exception& e) {
    fs::remove(script);
    return Error{std::string(e.what()) + " (install gnuplot, e.g. Debian's gnuplot-nox)"};
  }
  fs::remove(script);
  if (r.exit_code != 0 || r.out.find("<svg") == std::string::npos)
    return Error{"gnuplot failed on chart \"" + chart.title + "\": " + r.err};
  return r.out;
}

std::string inline_svg(const std::string& svg, const std::string& id_prefix) {
  std::string s = svg.substr(std::min(svg.find("<svg"), svg.size()));
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  };
  replace_all("id='", "id='" + id_prefix);
  replace_all("id=\"", "id=\"" + id_prefix);
  replace_all("href='#", "href='#" + id_prefix);
  replace_all("href=\"#", "href=\"#" + id_prefix);
  replace_all("url(#", "url(#" + id_prefix);
  return s;
}

}  // namespace vramsim::reports
