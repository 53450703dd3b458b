// The JupyterLab side: register the MLSQL mode under the name the mlsql kernel's language_info gives
// (codemirror_mode "mlsql", mime text/x-mlsql), so its notebooks, .mlsql files and ```mlsql blocks
// in Markdown are coloured with it.
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';

const plugin = {
  id: 'mlsql-ray-lang:plugin',
  description: 'MLSQL (Byzer) colouring: MLSQL statements, their Spark SQL and --%python cells.',
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  activate: (app, languages) => {
    languages.addLanguage({
      name: 'mlsql',
      displayName: 'MLSQL',
      alias: ['byzer'],
      mime: 'text/x-mlsql',
      extensions: ['mlsql', 'byzer'],
      load: async () => (await import('./mlsql')).mlsql()
    });
  }
};

export default plugin;
