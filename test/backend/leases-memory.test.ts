import { LeaseBoard } from '../../src/backend/memory-leases.js';
import { leaseApiContract } from './leases-contract.js';

leaseApiContract('in memory (LeaseBoard)', () => {
  const board = new LeaseBoard();
  return Promise.resolve({ client: () => board.client(), close: () => Promise.resolve() });
});
