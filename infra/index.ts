import { heraldTopology } from '../shared/topology';
import { Messaging } from './components/messaging';
import { readInfraConfig } from './config';

const config = readInfraConfig();
const messaging = new Messaging('herald', { topology: heraldTopology({ prefix: config.topicPrefix }) });

export const topics = Object.fromEntries(Object.entries(messaging.topics).map(([key, topic]) => [key, topic.name]));
