//===- RematOracle.cpp - Checkmate's MILP through CBC ---------------------===//
//
// Builds the MILP of RematOracle.h column by column and row by row through
// CBC's C interface, solves it, reads the schedule back from R and replays
// it with the independent checker before returning it: a schedule that does
// not replay within the budget at the cost CBC claims is an internal error,
// never an answer.
//
//===----------------------------------------------------------------------===//
#include "tests/support/RematOracle.h"

#include <coin/Cbc_C_Interface.h>

#include <chrono>
#include <cmath>
#include <numeric>

namespace snug {
namespace {

RematSchedule dropUnreadComputations(const RematGraph &graph,
                                     RematSchedule schedule);

/// Columns and rows of the MILP, and where each variable is.
class Formulation {
public:
  Formulation(const RematGraph &graph, uint64_t budget);
  ~Formulation() { Cbc_deleteModel(model); }
  Formulation(const Formulation &) = delete;
  Formulation &operator=(const Formulation &) = delete;

  Cbc_Model *getModel() const { return model; }
  /// R[t][i] (m <= i <= m + t).
  int getR(unsigned t, unsigned i) const { return rStart[t] + int(i - m); }
  /// S[t][i] (i < m + t).
  int getS(unsigned t, unsigned i) const { return sStart[t] + int(i); }
  unsigned getNumStages() const { return numStages; }
  unsigned getNumInputs() const { return m; }
  /// R and S of a schedule that fits the stages, for a MIP start; empty
  /// when it does not fit (a node twice in a stage, first computations out
  /// of order).
  std::vector<std::pair<int, double>>
  getStartValues(const RematSchedule &schedule) const;

private:
  int addColumn(double lower, double upper, double objective, bool integer) {
    // Named: CBC 2.10's C interface maps a MIP start's column indices
    // through the column names, and with every name empty it is rejected
    // (values land on the wrong columns).
    std::string name = "c" + std::to_string(numColumns);
    Cbc_addCol(model, name.c_str(), lower, upper, objective, integer, 0,
               nullptr, nullptr);
    return numColumns++;
  }
  void addRow(llvm::ArrayRef<std::pair<int, double>> terms, char sense,
              double rhs) {
    std::vector<int> columns;
    std::vector<double> coefficients;
    for (const auto &[column, coefficient] : terms) {
      columns.push_back(column);
      coefficients.push_back(coefficient);
    }
    Cbc_addRow(model, "", int(columns.size()), columns.data(),
               coefficients.data(), sense, rhs);
  }

  const RematGraph &graph;
  Cbc_Model *model = Cbc_newModel();
  unsigned m = 0, numStages = 0;
  int numColumns = 0;
  std::vector<int> rStart, sStart;
};

Formulation::Formulation(const RematGraph &graph, uint64_t budget)
    : graph(graph) {
  const unsigned n = graph.nodes.size();
  m = graph.getNumInputs();
  numStages = n - m;
  // Bytes in units of their greatest common divisor: every live sum is a
  // multiple of it, so the budget rounds down to one exactly.
  uint64_t unit = 0;
  for (const RematNode &node : graph.nodes)
    unit = std::gcd(unit, node.bytes);
  unit = std::max<uint64_t>(unit, 1);
  auto size = [&](unsigned i) { return double(graph.nodes[i].bytes / unit); };
  double limit = double(budget / unit);
  std::vector<std::vector<unsigned>> readers(n);
  for (unsigned j = 0; j < n; ++j)
    for (unsigned i : graph.nodes[j].operands)
      readers[i].push_back(j);
  auto isOutput = [&](unsigned i) { return graph.nodes[i].isOutput; };

  // R and S of every stage first, so that rows can name any of them.
  for (unsigned t = 0; t < numStages; ++t) {
    rStart.push_back(numColumns);
    for (unsigned i = m; i <= m + t; ++i) {
      bool own = i == m + t;
      // An output is computed once, at its own stage, and then kept.
      bool never = !own && isOutput(i);
      addColumn(own ? 1 : 0, never ? 0 : 1, double(graph.nodes[i].cost),
                true);
    }
    sStart.push_back(numColumns);
    for (unsigned i = 0; i < m + t; ++i) {
      bool kept = isOutput(i) || (t == 0 && i < m);
      addColumn(kept ? 1 : 0, 1, 0, true);
    }
  }
  for (unsigned t = 0; t < numStages; ++t) {
    // What a stage computes reads what it computed before or kept.
    for (unsigned j = m; j <= m + t; ++j)
      for (unsigned i : graph.nodes[j].operands) {
        std::vector<std::pair<int, double>> terms{{getR(t, j), 1},
                                                  {getS(t, i), -1}};
        if (i >= m)
          terms.push_back({getR(t, i), -1});
        addRow(terms, 'L', 0);
      }
    // Only what exists is kept.
    if (t > 0)
      for (unsigned i = 0; i + 1 < m + t; ++i) {
        std::vector<std::pair<int, double>> terms{{getS(t, i), 1},
                                                  {getS(t - 1, i), -1}};
        if (i >= m)
          terms.push_back({getR(t - 1, i), -1});
        addRow(terms, 'L', 0);
      }
    // Dominance, not modelling: a recomputation (other than the stage's
    // own, which the fixed order forces) or a keep that nothing in the
    // stage reads and the next stage does not keep only adds bytes, so
    // some optimum has none. Saying so prunes most of CBC's search.
    for (unsigned i = 0; i < m + t; ++i) {
      if (isOutput(i))
        continue;
      std::vector<std::pair<int, double>> uses;
      for (unsigned j : readers[i])
        if (j <= m + t)
          uses.push_back({getR(t, j), -1});
      if (t + 1 < numStages)
        uses.push_back({getS(t + 1, i), -1});
      // (Not S[0] of a graph input: it is there from the start, read or
      // not.)
      for (int column : {i >= m ? getR(t, i) : -1,
                         t == 0 && i < m ? -1 : getS(t, i)}) {
        if (column < 0)
          continue;
        std::vector<std::pair<int, double>> terms{{column, 1}};
        terms.insert(terms.end(), uses.begin(), uses.end());
        addRow(terms, 'L', 0);
      }
    }
    // Live bytes step by step; released[k] = terms freeing after step k.
    int previousU = -1;
    std::vector<std::pair<int, double>> releasedBefore;
    for (unsigned k = m; k <= m + t; ++k) {
      int u = addColumn(0, limit, 0, false);
      std::vector<std::pair<int, double>> terms{{u, 1},
                                                {getR(t, k), -size(k)}};
      if (previousU < 0) {
        for (unsigned i = 0; i < m + t; ++i)
          terms.push_back({getS(t, i), -size(i)});
      } else {
        terms.push_back({previousU, -1});
        for (const auto &term : releasedBefore)
          terms.push_back(term);
      }
      addRow(terms, 'E', 0);
      previousU = u;
      // F[t][i][k] for k itself and each operand of k.
      releasedBefore.clear();
      std::vector<unsigned> released{k};
      released.insert(released.end(), graph.nodes[k].operands.begin(),
                      graph.nodes[k].operands.end());
      for (unsigned i : released) {
        if (isOutput(i) || size(i) == 0)
          continue;
        int f = addColumn(0, 1, 0, false);
        releasedBefore.push_back({f, size(i)});
        addRow({{f, 1}, {getR(t, k), -1}}, 'L', 0);
        if (t + 1 < numStages)
          addRow({{f, 1}, {getS(t + 1, i), 1}}, 'L', 1);
        for (unsigned j : readers[i])
          if (j > k && j <= m + t)
            addRow({{f, 1}, {getR(t, j), 1}}, 'L', 1);
      }
    }
  }
}

std::vector<std::pair<int, double>>
Formulation::getStartValues(const RematSchedule &given) const {
  const unsigned n = graph.nodes.size();
  RematSchedule schedule = dropUnreadComputations(graph, given);
  // Stage of each step: first computations must come in node order, and
  // a stage ends at its own node's first computation.
  std::vector<unsigned> stageOf(schedule.size());
  std::vector<bool> seen(n, false);
  unsigned stage = 0;
  std::vector<std::vector<bool>> computedIn(numStages,
                                            std::vector<bool>(n, false));
  for (size_t p = 0; p < schedule.size(); ++p) {
    unsigned i = schedule[p];
    if (i < m || i >= n || stage >= numStages)
      return {};
    if (!seen[i]) {
      if (i != m + stage)
        return {};
      seen[i] = true;
    }
    if (computedIn[stage][i])
      return {};
    computedIn[stage][i] = true;
    stageOf[p] = stage;
    if (i == m + stage)
      ++stage;
  }
  if (stage != numStages)
    return {};
  // An instance is kept into every stage after its own up to that of its
  // last read (reads use the latest computation), outputs to the end.
  std::vector<std::vector<bool>> kept(numStages, std::vector<bool>(n, false));
  // The stage of i's latest computation (-1: a graph input, or none yet)
  // and of the latest read of that computation.
  std::vector<int64_t> latest(n, -1), lastRead(n, -1);
  auto keep = [&](unsigned i) {
    int64_t until = graph.nodes[i].isOutput ? int64_t(numStages) - 1
                                            : lastRead[i];
    for (int64_t t = latest[i] + 1; t <= until; ++t)
      kept[t][i] = true;
  };
  for (size_t p = 0; p < schedule.size(); ++p) {
    unsigned i = schedule[p];
    for (unsigned operand : graph.nodes[i].operands)
      lastRead[operand] = stageOf[p];
    if (latest[i] >= 0) // a recomputation: the previous one is done
      keep(i);
    latest[i] = stageOf[p];
    lastRead[i] = stageOf[p];
  }
  for (unsigned i = 0; i < n; ++i)
    if (i < m || latest[i] >= 0)
      keep(i);
  std::vector<std::pair<int, double>> values;
  for (unsigned t = 0; t < numStages; ++t) {
    for (unsigned i = m; i <= m + t; ++i)
      values.push_back({getR(t, i), computedIn[t][i] ? 1.0 : 0.0});
    for (unsigned i = 0; i < m + t; ++i)
      values.push_back({getS(t, i), kept[t][i] || (t == 0 && i < m) ? 1.0
                                                                   : 0.0});
  }
  return values;
}

/// `schedule` without the recomputations nothing reads (a value copied
/// for reads a later copy took over, say), repeatedly, since dropping one
/// can leave what it read unread. The dominance rows of the MILP forbid
/// them, so a start that has one is rejected; without them it costs less
/// and has no more bytes live at any step. Dropping one redirects no
/// read: reads take the latest computation, and none falls between an
/// unread one and the next.
RematSchedule dropUnreadComputations(const RematGraph &graph,
                                     RematSchedule schedule) {
  for (bool dropped = true; dropped;) {
    dropped = false;
    std::vector<bool> needed(schedule.size(), false), seen(graph.nodes.size());
    std::vector<int64_t> latest(graph.nodes.size(), -1);
    for (size_t p = 0; p < schedule.size(); ++p) {
      unsigned i = schedule[p];
      for (unsigned operand : graph.nodes[i].operands)
        if (latest[operand] >= 0)
          needed[latest[operand]] = true;
      // A first computation is the order's own (the stage's end).
      if (!seen[i])
        needed[p] = true;
      seen[i] = true;
      latest[i] = int64_t(p);
    }
    for (unsigned i = 0; i < graph.nodes.size(); ++i)
      if (graph.nodes[i].isOutput && latest[i] >= 0)
        needed[latest[i]] = true;
    RematSchedule kept;
    for (size_t p = 0; p < schedule.size(); ++p)
      if (needed[p])
        kept.push_back(schedule[p]);
    dropped = kept.size() < schedule.size();
    schedule = std::move(kept);
  }
  return schedule;
}

/// Bytes every schedule has live at some step, whatever it recomputes: at
/// the first computation of each node, the node and its operands, the
/// outputs computed before it (kept to the end) and the graph inputs that
/// it or a later node reads (inputs are never computed again). CBC takes
/// seconds to prove what this shows at once.
uint64_t getForcedPeak(const RematGraph &graph) {
  const unsigned n = graph.nodes.size(), m = graph.getNumInputs();
  std::vector<unsigned> lastReader(n, 0);
  for (unsigned j = 0; j < n; ++j)
    for (unsigned i : graph.nodes[j].operands)
      lastReader[i] = j;
  uint64_t peak = 0, outputs = 0;
  for (unsigned k = m; k < n; ++k) {
    const RematNode &node = graph.nodes[k];
    uint64_t live = node.bytes + outputs;
    for (unsigned i : node.operands)
      if (!(i < m && lastReader[i] >= k) && !graph.nodes[i].isOutput)
        live += graph.nodes[i].bytes;
    for (unsigned i = 0; i < m; ++i)
      if (lastReader[i] >= k || graph.nodes[i].isOutput)
        live += graph.nodes[i].bytes;
    peak = std::max(peak, live);
    if (node.isOutput)
      outputs += node.bytes;
  }
  return peak;
}

} // namespace

llvm::StringRef getRematOracleStatusName(RematOracleResult::Status status) {
  switch (status) {
  case RematOracleResult::Status::Optimal:
    return "optimal";
  case RematOracleResult::Status::Feasible:
    return "feasible";
  case RematOracleResult::Status::Infeasible:
    return "infeasible";
  case RematOracleResult::Status::Unknown:
    return "unknown";
  }
  llvm_unreachable("unknown status");
}

llvm::Expected<RematLowerBound>
boundRematExtraCost(const RematGraph &graph, uint64_t budget,
                    double timeLimitSeconds) {
  if (llvm::Error error = replayRematSchedule(graph, getInOrderSchedule(graph))
                              .takeError())
    return error;
  auto start = std::chrono::steady_clock::now();
  const unsigned n = graph.nodes.size(), m = graph.getNumInputs();
  std::vector<unsigned> lastReader(n, 0);
  for (unsigned j = 0; j < n; ++j)
    for (unsigned i : graph.nodes[j].operands)
      lastReader[i] = std::max(lastReader[i], j);
  uint64_t unit = 0;
  for (const RematNode &node : graph.nodes)
    unit = std::gcd(unit, node.bytes);
  unit = std::max<uint64_t>(unit, 1);
  RematLowerBound bound;
  for (unsigned k = m; k < n; ++k) {
    const RematNode &node = graph.nodes[k];
    // Live whatever is recomputed: k, its operands, outputs before it,
    // inputs read at or after it.
    std::vector<bool> forced(n, false);
    forced[k] = true;
    for (unsigned i : node.operands)
      forced[i] = true;
    for (unsigned i = 0; i < k; ++i)
      if (graph.nodes[i].isOutput || (i < m && lastReader[i] >= k))
        forced[i] = true;
    uint64_t forcedBytes = 0, optionalBytes = 0;
    // Needed after the step: computed before k, read by a node after it.
    std::vector<bool> needed(n, false);
    for (unsigned i = 0; i < k; ++i) {
      if (forced[i])
        forcedBytes += graph.nodes[i].bytes;
      else if (lastReader[i] > k) {
        needed[i] = true;
        optionalBytes += graph.nodes[i].bytes;
      }
    }
    forcedBytes += node.bytes;
    if (forcedBytes > budget) {
      bound.infeasible = true;
      break;
    }
    if (forcedBytes + optionalBytes <= budget)
      continue;
    // Columns: per earlier value not forced, L (live across the step) and,
    // for a computed one, D (computed again after it).
    Cbc_Model *model = Cbc_newModel();
    int columns = 0;
    auto addColumn = [&](double objective) {
      std::string name = "c" + std::to_string(columns);
      Cbc_addCol(model, name.c_str(), 0, 1, objective, 1, 0, nullptr,
                 nullptr);
      return columns++;
    };
    std::vector<int> live(n, -1), again(n, -1);
    for (unsigned i = 0; i < k; ++i) {
      if (forced[i])
        continue;
      live[i] = addColumn(0);
      if (i >= m && !graph.nodes[i].isOutput)
        again[i] = addColumn(double(graph.nodes[i].cost));
    }
    auto addRow = [&](std::vector<std::pair<int, double>> terms, char sense,
                      double rhs) {
      std::vector<int> index;
      std::vector<double> value;
      for (const auto &[column, coefficient] : terms) {
        index.push_back(column);
        value.push_back(coefficient);
      }
      Cbc_addRow(model, "", int(index.size()), index.data(), value.data(),
                 sense, rhs);
    };
    std::vector<std::pair<int, double>> memory;
    for (unsigned i = 0; i < k; ++i) {
      if (forced[i])
        continue;
      memory.push_back({live[i], double(graph.nodes[i].bytes / unit)});
      if (needed[i]) {
        std::vector<std::pair<int, double>> terms{{live[i], 1}};
        if (again[i] >= 0)
          terms.push_back({again[i], 1});
        addRow(terms, 'G', 1);
      }
      if (again[i] < 0)
        continue;
      // What a computation after the step reads exists after it.
      for (unsigned operand : graph.nodes[i].operands) {
        if (forced[operand])
          continue;
        std::vector<std::pair<int, double>> terms{{live[operand], 1},
                                                  {again[i], -1}};
        if (again[operand] >= 0)
          terms.push_back({again[operand], 1});
        addRow(terms, 'G', 0);
      }
    }
    addRow(memory, 'L', double((budget - forcedBytes) / unit));
    Cbc_setLogLevel(model, 0);
    Cbc_setParameter(model, "timeMode", "elapsed");
    Cbc_setMaximumSeconds(model, timeLimitSeconds);
    Cbc_setAllowableGap(model, 0.5);
    Cbc_solve(model);
    if (Cbc_isProvenInfeasible(model)) {
      Cbc_deleteModel(model);
      bound.infeasible = true;
      break;
    }
    double value = Cbc_isProvenOptimal(model)
                       ? Cbc_getObjValue(model)
                       : Cbc_getBestPossibleObjValue(model);
    bound.exact &= bool(Cbc_isProvenOptimal(model));
    Cbc_deleteModel(model);
    // Costs are whole FLOPs.
    bound.extraCost = std::max(
        bound.extraCost, uint64_t(std::max(0.0, std::ceil(value - 1e-6))));
  }
  bound.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return bound;
}

llvm::Expected<RematOracleResult>
solveRematOracle(const RematGraph &graph, uint64_t budget,
                 const RematOracleOptions &options) {
  if (llvm::Error error = replayRematSchedule(graph, getInOrderSchedule(graph))
                              .takeError())
    return error;
  auto start = std::chrono::steady_clock::now();
  RematOracleResult result;
  if (getForcedPeak(graph) > budget) {
    result.status = RematOracleResult::Status::Infeasible;
    return result;
  }
  Formulation formulation(graph, budget);
  Cbc_Model *model = formulation.getModel();
  result.numColumns = unsigned(Cbc_getNumCols(model));
  result.numRows = unsigned(Cbc_getNumRows(model));
  Cbc_setLogLevel(model, 0);
  // CBC counts CPU seconds unless told otherwise; the limit is wall-clock.
  Cbc_setParameter(model, "timeMode", "elapsed");
  Cbc_setMaximumSeconds(model, options.timeLimitSeconds);
  // Costs are whole FLOPs: an incumbent within half of one of the bound is
  // optimal.
  Cbc_setAllowableGap(model, 0.5);
  for (const auto &[name, value] : options.cbcParameters)
    Cbc_setParameter(model, name.c_str(), value.c_str());
  if (!options.start.empty()) {
    std::vector<std::pair<int, double>> values =
        formulation.getStartValues(options.start);
    std::vector<int> columns;
    std::vector<double> startValues;
    for (const auto &[column, value] : values) {
      columns.push_back(column);
      startValues.push_back(value);
    }
    result.startGiven = !columns.empty();
    if (result.startGiven)
      Cbc_setMIPStartI(model, int(columns.size()), columns.data(),
                       startValues.data());
  }
  Cbc_solve(model);
  result.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  result.bestBound = Cbc_getBestPossibleObjValue(model);
  if (Cbc_isProvenInfeasible(model)) {
    result.status = RematOracleResult::Status::Infeasible;
    return result;
  }
  const double *solution = Cbc_bestSolution(model);
  if (!solution) {
    result.status = RematOracleResult::Status::Unknown;
    return result;
  }
  result.status = Cbc_isProvenOptimal(model)
                      ? RematOracleResult::Status::Optimal
                      : RematOracleResult::Status::Feasible;
  unsigned m = formulation.getNumInputs();
  for (unsigned t = 0; t < formulation.getNumStages(); ++t)
    for (unsigned i = m; i <= m + t; ++i)
      if (solution[formulation.getR(t, i)] > 0.5)
        result.schedule.push_back(i);
  double objective = Cbc_getObjValue(model);
  llvm::Expected<RematReplay> replay =
      replayRematSchedule(graph, result.schedule);
  if (!replay)
    return replay.takeError();
  result.cost = replay->cost;
  result.extraCost = result.cost - graph.getBaseCost();
  if (replay->peakBytes > budget || std::fabs(objective - double(result.cost)) > 0.5)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "remat oracle: CBC's schedule replays to a peak of " +
            std::to_string(replay->peakBytes) + " B (budget " +
            std::to_string(budget) + " B) at a cost of " +
            std::to_string(result.cost) + " (CBC says " +
            std::to_string(objective) + ")");
  if (result.status == RematOracleResult::Status::Optimal)
    result.bestBound = double(result.cost);
  return result;
}

} // namespace snug
