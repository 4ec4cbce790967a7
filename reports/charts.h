// The report's charts, drawn by gnuplot (Debian's gnuplot-nox) as SVG: a chart is described
// here as data, turned into a gnuplot script, and gnuplot draws it. Nothing here draws SVG by
// hand; the output is whatever gnuplot's svg terminal writes (deterministic for equal input).
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace vramsim::reports {

struct Chart {
  enum class Kind {
    Lines,        // one line per series over x (numeric x, or categories when `categories` is set)
    Points,       // as Lines, unjoined: a scatter, where a line between points would claim a path
    Bars,         // clustered bars: one group per category, one bar per series
    StackedBars,  // one bar per category, the series stacked
  };
  Kind kind = Kind::Lines;
  std::string title, xlabel, ylabel;
  std::vector<std::string> categories;  // Bars/StackedBars: the groups; Lines: x tick labels (x = 0, 1, ...)
  struct Series {
    std::string name;
    std::vector<double> x;          // Lines with numeric x
    std::vector<double> y;          // NaN: no value (a failed point)
    std::vector<double> lo, hi;     // Lines: optional error band (p5..p95), same length as y
  };
  std::vector<Series> series;
  // Lines and Points with numeric x: both axes logarithmic (values <= 0 are not drawn).
  bool log_scale = false;
  // Dashed lines y = ratio x over the chart (predicted against measured: 1, and a tolerance's
  // 0.75 and 1.25); `name` titles the line in the key, "" leaves it out of the key.
  struct Reference {
    double ratio = 1;
    std::string name;
  };
  std::vector<Reference> references;
};

// The gnuplot script that draws `chart` as SVG on stdout.
std::string gnuplot_script(const Chart& chart);

// Runs gnuplot; the SVG document, or an error (gnuplot missing or failing).
Result<std::string> render_svg(const Chart& chart);

// The <svg> element of a gnuplot SVG document, for inlining in HTML: the XML prologue
// dropped and element ids prefixed with `id_prefix` so that several charts share a page.
std::string inline_svg(const std::string& svg, const std::string& id_prefix);

}  // namespace vramsim::reports
