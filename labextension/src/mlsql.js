// MLSQL for CodeMirror 6: a stream parser that knows only what is MLSQL's own (statement words,
// !commands, --% annotations, format.`path`, '''…''' strings, ${} variables) and hands the Spark SQL of
// select/insert/… to CodeMirror's Spark SQL mode and a --%python cell to its Python mode. It reads
// cells as the parser does (mlsql_ray/lang/parser.py: split_cells, python_cell) and colours as the
// Pygments lexer does (mlsql_ray/lang/highlight.py). Its words (words.json) and the shapes it matches
// (shapes.json: annotations, variables, !commands, formats, ...) are MLSQL's lexicon
// (mlsql_ray/lang/lexicon.py), written into these two files by `npm run build`: edit them there.
import { HighlightStyle, LanguageSupport, StreamLanguage, syntaxHighlighting } from '@codemirror/language';
import { python } from '@codemirror/legacy-modes/mode/python';
import { sparkSQL } from '@codemirror/legacy-modes/mode/sql';
import { EditorState, Prec } from '@codemirror/state';
import { Tag, tags } from '@lezer/highlight';

import shapes from './shapes.json';
import words from './words.json';

const SQL_STATEMENTS = new Set(words.sqlStatements);
const MLSQL_STATEMENTS = new Set(words.mlsqlStatements);
const KEYWORDS = new Set(words.mlsqlKeywords.map(word => word.toLowerCase()));

/**
 * The word that starts an MLSQL statement (load, save, select, train, …, a !command): a sub-tag of
 * keyword, so that a highlighter that knows only keywords (JupyterLab's, any theme's) colours it as
 * one, while MLSQL's own highlighter below marks it apart from the keywords of Python and Spark SQL.
 */
export const mlsqlStatement = Tag.define(tags.keyword);
const STATEMENT = 'mlsqlStatement'; // its token name (the tokenTable of mlsqlLanguage)
const atStart = shape => new RegExp(`^(?:${shape})`);
const CELL_MARKER = atStart(shapes.cellMarker); // a new cell of a script (`-- %%`)
const ANNOTATION = atStart(shapes.annotation);
const PYTHON_ANNOTATION = atStart(shapes.pythonAnnotation);
const VARIABLE = atStart(shapes.variable);
const COMMAND = atStart(shapes.command);
const FORMAT = atStart(shapes.format);
const NUMBER = atStart(shapes.number);
const OPERATOR = atStart(shapes.operator);
const VELOCITY_DIRECTIVE = atStart(shapes.velocityDirective);
const VELOCITY_REFERENCE = atStart(shapes.velocityReference);
const BRANCH_VARIABLE = atStart(shapes.branchVariable);

function startState() {
  // phase: 'start' (blank lines and annotations opening a cell), 'mlsql' or 'python' (its code)
  return { phase: 'start', annotated: false, python: null, quote: null, comment: false, sql: null };
}

function copyState(state) {
  const copy = { ...state };
  if (state.python) {
    copy.python = { ...state.python, scopes: state.python.scopes.map(scope => ({ ...scope })) };
  }
  if (state.sql) {
    const copyContext = context => context && { ...context, prev: copyContext(context.prev) };
    copy.sql = { ...state.sql, context: copyContext(state.sql.context) };
  }
  return copy;
}

/** The annotations are over: the cell's code starts (Python if one of them was --%python). */
function endAnnotations(state) {
  state.phase = state.python ? 'python' : 'mlsql';
}

function token(stream, state) {
  if (stream.sol() && stream.match(CELL_MARKER, false)) {
    stream.skipToEnd();
    Object.assign(state, startState());
    return 'comment';
  }
  if (state.phase === 'start') {
    if (stream.sol() && stream.match(ANNOTATION, false)) {
      if (stream.match(PYTHON_ANNOTATION, false)) {
        state.python = python.startState();
      }
      state.annotated = true;
      stream.skipToEnd();
      return 'meta';
    }
    if (stream.match(/^\s+$/)) {
      blankLine(state);
      return null;
    }
    endAnnotations(state);
  }
  if (state.phase === 'python') {
    return python.token(stream, state.python);
  }
  return mlsqlToken(stream, state);
}

function blankLine(state) {
  if (state.phase === 'start' && state.annotated) {
    endAnnotations(state); // a blank line ends the annotations, as in python_cell
  }
}

function mlsqlToken(stream, state) {
  if (state.comment) {
    return blockComment(stream, state);
  }
  if (state.quote) {
    return quoted(stream, state);
  }
  if (stream.eatSpace()) {
    return null;
  }
  if (stream.match('--')) {
    stream.skipToEnd();
    return 'comment';
  }
  if (stream.match('/*')) {
    state.comment = true;
    return blockComment(stream, state);
  }
  if (stream.match(VARIABLE)) {
    return 'variableName.special';
  }
  const quote = stream.match(/^('''|["'`])/);
  if (quote) {
    state.quote = quote[0];
    return quoted(stream, state);
  }
  if (state.sql) {
    return sqlToken(stream, state);
  }
  if (stream.match(COMMAND)) {
    return STATEMENT; // !show, !delta, !if, a macro !name
  }
  if (stream.match(FORMAT)) {
    return 'variableName.standard'; // the format of format.`path`
  }
  if (stream.match(NUMBER)) {
    return 'number';
  }
  const word = stream.match(/^[\p{L}\p{N}_]+/u);
  if (word) {
    const lower = word[0].toLowerCase();
    if (SQL_STATEMENTS.has(lower)) {
      state.sql = sparkSQL.startState();
      return STATEMENT;
    }
    if (MLSQL_STATEMENTS.has(lower)) {
      return STATEMENT;
    }
    return KEYWORDS.has(lower) ? 'keyword' : 'variableName';
  }
  if (stream.match(OPERATOR)) {
    return 'operator';
  }
  if (stream.match(/^[;,.:]/)) {
    return 'punctuation';
  }
  stream.next(); // brackets stay unstyled, so that matching pairs are tokens of one type
  return null;
}

/** Spark SQL up to the ';': Velocity and branch variables here, the rest by the Spark SQL mode. */
function sqlToken(stream, state) {
  if (stream.eat(';')) {
    state.sql = null;
    return 'punctuation';
  }
  if (stream.match(VELOCITY_DIRECTIVE)) {
    return 'meta'; // Velocity templates
  }
  if (stream.match(VELOCITY_REFERENCE) || stream.match(BRANCH_VARIABLE)) {
    return 'variableName.special'; // Velocity's $x, a branch condition's :v
  }
  return sparkSQL.token(stream, state.sql);
}

function blockComment(stream, state) {
  if (stream.skipTo('*/')) {
    stream.match('*/');
    state.comment = false;
  } else {
    stream.skipToEnd();
  }
  return 'comment';
}

/** A string, '''…''' or a `quoted name` (maybe over lines), up to its end or to a ${variable} in it. */
function quoted(stream, state) {
  const quote = state.quote;
  const style = quote === '`' ? 'string.special' : 'string';
  if (stream.match(VARIABLE)) {
    return 'variableName.special';
  }
  while (!stream.eol()) {
    if (quote === '`' && stream.match('``')) {
      continue;
    }
    if (stream.match(quote)) {
      state.quote = null;
      return style;
    }
    if (stream.match(VARIABLE, false)) {
      return style;
    }
    if (stream.next() === '\\' && quote.length === 1 && quote !== '`') {
      stream.next();
    }
  }
  return style;
}

function indent(state, textAfter, context) {
  return state.phase === 'python' ? python.indent(state.python, textAfter, context) : null;
}

export const mlsqlLanguage = StreamLanguage.define({
  name: 'mlsql',
  startState,
  copyState,
  token,
  blankLine,
  indent,
  tokenTable: { [STATEMENT]: mlsqlStatement },
  languageData: {
    commentTokens: { line: '--', block: { open: '/*', close: '*/' } },
    closeBrackets: { brackets: ['(', '[', '{', "'", '"', '`'] },
    indentOnInput: /^\s*[\}\]\)]$/
  }
});

/** Whether ``pos`` is in the code of a --%python cell (after its annotations, before a `-- %%`). */
export function inPythonCode(doc, pos) {
  const here = doc.lineAt(pos).number;
  let first = here;
  while (first > 1 && !CELL_MARKER.test(doc.line(first - 1).text)) {
    first--;
  }
  let isPython = false;
  let annotated = false;
  for (let number = first; number <= here; number++) {
    const text = doc.line(number).text;
    if (CELL_MARKER.test(text)) {
      return false;
    }
    if (ANNOTATION.test(text)) {
      if (number === here) {
        return false;
      }
      annotated = true;
      isPython = isPython || PYTHON_ANNOTATION.test(text);
    } else if (text.trim() || annotated) {
      return isPython; // the cell's code starts at or before this line
    }
  }
  return false;
}

// Inside a --%python cell, "toggle comment" writes Python's '#', not MLSQL's '--'
const pythonCellComments = Prec.high(
  EditorState.languageData.of((state, pos) =>
    inPythonCode(state.doc, pos) ? [{ commentTokens: { line: '#' } }] : []
  )
);

// The class of MLSQL's statement words, next to the keyword class the editor's theme gives them: a
// fixed class and no colour of its own, so they keep the theme's keyword look under any theme.
const statementClass = syntaxHighlighting(HighlightStyle.define([{ tag: mlsqlStatement, class: 'cm-mlsql-statement' }]));

export function mlsql() {
  return new LanguageSupport(mlsqlLanguage, [pythonCellComments, statementClass]);
}
