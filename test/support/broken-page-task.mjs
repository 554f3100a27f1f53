// A page-reading thread's code that cannot load (test/integration/page-reader.test.ts).
throw new Error('page-task failed to load: a broken build');
